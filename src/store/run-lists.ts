// A workspace's runs of one kind, newest first, paged by a keyset on the run id (UUIDv7: time
// ordered), so a page continues exactly after the last id the previous one showed, whatever was
// inserted meanwhile. Filters are conditions added to one query; each distinct query is prepared once.
//
// Each item comes out of SQLite as the JSON the API shows (AgentRunListItem, WorkflowRunListItem):
// a page of rows turned into objects and serialised again cost three times as much (a page of 21
// runs: 74 µs against 26 µs), which made a list cost more than twice a read. The integration tests
// check every list reply against those schemas.
import type { Db } from './db';
import type { RunKind, RunStatus } from './runs';

export interface RunListQuery {
  kind: RunKind;
  workspaceId: string;
  /** The reader: their own test runs, and every run a trigger or schedule started. */
  userId: string;
  targetId?: string;
  statuses?: RunStatus[];
  source?: string;
  /** accepted_at ≥ this (ISO 8601, UTC). */
  acceptedFrom?: string;
  /** accepted_at < this. */
  acceptedBefore?: string;
  /** Only ids below this one (the cursor). */
  beforeId?: string;
  limit: number;
}

export interface RunListRow {
  id: string;
  /** The run as a list item of its kind, as JSON. */
  item: string;
}

/** The list items' JSON, per kind (credits: null for a refusal, which spent nothing). */
const ITEM_SQL: Record<RunKind, string> = {
  agent: `json_object('id', id,
    'agent', CASE WHEN agent_slug IS NOT NULL THEN json_object('slug', agent_slug, 'name', agent_name) END,
    'status', status, 'source', source, 'trigger_id', trigger_id,
    'credits', CASE WHEN status = 'refused' THEN NULL ELSE credits_spent END, 'error', error,
    'started_at', accepted_at, 'run_started_at', started_at, 'finished_at', finished_at)`,
  workflow: `json_object('id', id, 'workflow_id', target_id,
    'workflow_version_id', CASE WHEN target_version IS NOT NULL THEN target_id || '@' || target_version END,
    'status', status, 'source', source, 'trigger_id', trigger_id,
    'credits', CASE WHEN status = 'refused' THEN NULL ELSE credits_spent END, 'error', error,
    'accepted_at', accepted_at, 'started_at', started_at, 'finished_at', finished_at)`,
};

export function runLists(db: Db) {
  const prepared = new Map<string, ReturnType<Db['prepare']>>();
  return (q: RunListQuery): RunListRow[] => {
    const where = ['workspace_id = @workspace', 'kind = @kind', "(source != 'test' OR started_by = @user)"];
    const params: Record<string, unknown> = { workspace: q.workspaceId, kind: q.kind, user: q.userId };
    if (q.targetId !== undefined) (where.push('target_id = @target'), (params.target = q.targetId));
    if (q.statuses?.length) {
      where.push(`status IN (${q.statuses.map((_, i) => `@status${i}`).join(', ')})`);
      q.statuses.forEach((status, i) => (params[`status${i}`] = status));
    }
    if (q.source !== undefined) (where.push('source = @source'), (params.source = q.source));
    if (q.acceptedFrom !== undefined) (where.push('accepted_at >= @from'), (params.from = q.acceptedFrom));
    if (q.acceptedBefore !== undefined) (where.push('accepted_at < @before'), (params.before = q.acceptedBefore));
    if (q.beforeId !== undefined) (where.push('id < @cursor'), (params.cursor = q.beforeId));
    // The limit is written into the statement (a whole number the service checked): bound as a
    // parameter it cost each page 6 µs more. At most 101 limits × 2^6 filter shapes are prepared.
    if (!Number.isSafeInteger(q.limit) || q.limit < 1) throw new RangeError(`limit: ${q.limit}`);
    const sql = `SELECT id, ${ITEM_SQL[q.kind]} AS item FROM runs WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ${q.limit}`;
    let statement = prepared.get(sql);
    if (!statement) prepared.set(sql, (statement = db.prepare(sql)));
    return statement.all(params) as RunListRow[];
  };
}
