// A workspace's runs of one kind, newest first, paged by a keyset on the run id (UUIDv7: time
// ordered), so a page continues exactly after the last id the previous one showed, whatever was
// inserted meanwhile. Filters are conditions added to one query; each distinct query is prepared once.
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
  target_id: string;
  target_version: number | null;
  status: RunStatus;
  source: string;
  trigger_id: string | null;
  credits_spent: number;
  error: string | null;
  accepted_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** An agent run's agent as JSON `{ slug, name }`, from its snapshot. */
  agent: string | null;
}

export function runLists(db: Db) {
  const prepared = new Map<string, ReturnType<Db['prepare']>>();
  return (q: RunListQuery): RunListRow[] => {
    const where = ['workspace_id = @workspace', 'kind = @kind', "(source != 'test' OR started_by = @user)"];
    const params: Record<string, unknown> = { workspace: q.workspaceId, kind: q.kind, user: q.userId, limit: q.limit };
    if (q.targetId !== undefined) (where.push('target_id = @target'), (params.target = q.targetId));
    if (q.statuses?.length) {
      where.push(`status IN (${q.statuses.map((_, i) => `@status${i}`).join(', ')})`);
      q.statuses.forEach((status, i) => (params[`status${i}`] = status));
    }
    if (q.source !== undefined) (where.push('source = @source'), (params.source = q.source));
    if (q.acceptedFrom !== undefined) (where.push('accepted_at >= @from'), (params.from = q.acceptedFrom));
    if (q.acceptedBefore !== undefined) (where.push('accepted_at < @before'), (params.before = q.acceptedBefore));
    if (q.beforeId !== undefined) (where.push('id < @cursor'), (params.cursor = q.beforeId));
    const sql = `SELECT id, target_id, target_version, status, source, trigger_id, credits_spent, error, accepted_at, started_at, finished_at,
        CASE WHEN kind = 'agent' AND json_valid(snapshot) AND json_type(snapshot) = 'object'
          THEN json_object('slug', json_extract(snapshot, '$.slug'), 'name', json_extract(snapshot, '$.name')) END AS agent
      FROM runs WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT @limit`;
    let statement = prepared.get(sql);
    if (!statement) prepared.set(sql, (statement = db.prepare(sql)));
    return statement.all(params) as RunListRow[];
  };
}
