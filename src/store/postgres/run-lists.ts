// A workspace's runs of one kind, newest first, paged by a keyset on the run id (see
// store/run-lists.ts): the same filters and the same items, built as JSON by the server
// (json_build_object keeps the members in the order written, as SQLite's json_object does).
import type { RunKind } from '../runs';
import type { RunListQuery, RunListRow } from '../run-lists';
import type { Sql } from './database';

/** The list items' JSON, per kind: the members of store/run-lists.ts's ITEM_SQL, in its order. */
const ITEM_SQL: Record<RunKind, string> = {
  agent: `json_build_object('id', id,
    'agent', CASE WHEN agent_slug IS NOT NULL THEN json_build_object('slug', agent_slug, 'name', agent_name) END,
    'status', status, 'source', source, 'trigger_id', trigger_id,
    'credits', CASE WHEN status = 'refused' THEN NULL ELSE credits_spent END, 'error', error,
    'started_at', accepted_at, 'run_started_at', started_at, 'finished_at', finished_at)::text`,
  workflow: `json_build_object('id', id, 'workflow_id', target_id,
    'workflow_version_id', CASE WHEN target_version IS NOT NULL THEN target_id || '@' || target_version END,
    'status', status, 'source', source, 'trigger_id', trigger_id,
    'credits', CASE WHEN status = 'refused' THEN NULL ELSE credits_spent END, 'error', error,
    'accepted_at', accepted_at, 'started_at', started_at, 'finished_at', finished_at)::text`,
};

export function pgRunLists(sql: Sql) {
  return (q: RunListQuery): Promise<RunListRow[]> => {
    const params: unknown[] = [q.workspaceId, q.kind, q.userId];
    const where = ['workspace_id = $1', 'kind = $2', "(source != 'test' OR started_by = $3)"];
    const add = (condition: (param: string) => string, value: unknown) => {
      params.push(value);
      where.push(condition(`$${params.length}`));
    };
    if (q.targetId !== undefined) add((p) => `target_id = ${p}`, q.targetId);
    if (q.statuses?.length) add((p) => `status = ANY(${p}::text[])`, q.statuses);
    if (q.source !== undefined) add((p) => `source = ${p}`, q.source);
    if (q.acceptedFrom !== undefined) add((p) => `accepted_at >= ${p}`, q.acceptedFrom);
    if (q.acceptedBefore !== undefined) add((p) => `accepted_at < ${p}`, q.acceptedBefore);
    if (q.beforeId !== undefined) add((p) => `id < ${p}`, q.beforeId);
    // Written into the statement, as SQLite's list does (a whole number the service checked).
    if (!Number.isSafeInteger(q.limit) || q.limit < 1) throw new RangeError(`limit: ${q.limit}`);
    return sql.rows<RunListRow>(`SELECT id, ${ITEM_SQL[q.kind]} AS item FROM runs WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ${q.limit}`, params);
  };
}
