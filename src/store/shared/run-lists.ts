// A workspace's runs of one kind, newest first, paged by a keyset on the run id (UUIDv7: time
// ordered), so a page continues exactly after the last id the previous one showed, whatever was
// inserted meanwhile. Both adapters run this query; each builds the items' JSON with its own JSON
// object function (the members, their order and their values are decided here).
import type { RunKind, RunListQuery } from '../port';

/** A dialect's JSON: an object of `members` (`'name', expression, …`), and a JSON value as text. */
export interface JsonDialect {
  object(members: string): string;
  text(json: string): string;
}

/** The list item's JSON, per kind (AgentRunListItem, WorkflowRunListItem; credits: null for a refusal, which spent nothing). */
function itemSql(kind: RunKind, object: JsonDialect['object']): string {
  const credits = `'credits', CASE WHEN status = 'refused' THEN NULL ELSE credits_spent END, 'error', error`;
  if (kind === 'agent') {
    return object(`'id', id,
      'agent', CASE WHEN agent_slug IS NOT NULL THEN ${object(`'slug', agent_slug, 'name', agent_name`)} END,
      'status', status, 'source', source, 'trigger_id', trigger_id, ${credits},
      'started_at', accepted_at, 'run_started_at', started_at, 'finished_at', finished_at`);
  }
  return object(`'id', id, 'workflow_id', target_id,
    'workflow_version_id', CASE WHEN target_version IS NOT NULL THEN target_id || '@' || target_version END,
    'status', status, 'source', source, 'trigger_id', trigger_id, ${credits},
    'accepted_at', accepted_at, 'started_at', started_at, 'finished_at', finished_at`);
}

/**
 * The page's statement, with `@name` parameters, and their values. `key`: the run id as the
 * dialect's list index orders it (the id itself, byte-wise). The limit is written into the
 * statement (a whole number the service checked; a bad one throws), or with `limit: 'bound'` is
 * the parameter @limit: each shape is then one statement whatever the limit (2^5 filter shapes ×
 * the statuses' count), few enough for every connection to keep all of them prepared.
 */
export function runListStatement(
  q: RunListQuery,
  json: JsonDialect,
  key = 'id',
  limit: 'written' | 'bound' = 'written',
): { sql: string; params: Record<string, unknown> } {
  if (!Number.isSafeInteger(q.limit) || q.limit < 1) throw new RangeError(`limit: ${q.limit}`);
  // The reader sees their own test runs, and every run a trigger or schedule started.
  const where = ['workspace_id = @workspace', 'kind = @kind', "(source != 'test' OR started_by = @user)", '(visible_to IS NULL OR visible_to = @user)'];
  const params: Record<string, unknown> = { workspace: q.workspaceId, kind: q.kind, user: q.userId };
  const add = (condition: string, name: string, value: unknown) => {
    where.push(condition);
    params[name] = value;
  };
  // A reader who is no administrator sees the runs of the workspace's space and of their teams'
  // (domain/spaces.ts): the teams as one text, `,a,b,`, that a team's slug (no commas, no LIKE
  // wildcards) is found in.
  if (q.teams !== undefined) add(`(team IS NULL OR @teams LIKE '%,' || team || ',%')`, 'teams', `,${q.teams.join(',')},`);
  if (q.targetId !== undefined) add('target_id = @target', 'target', q.targetId);
  for (const [i, status] of (q.statuses ?? []).entries()) params[`status${i}`] = status;
  if (q.statuses?.length) where.push(`status IN (${q.statuses.map((_, i) => `@status${i}`).join(', ')})`);
  if (q.source !== undefined) add('source = @source', 'source', q.source);
  if (q.acceptedFrom !== undefined) add('accepted_at >= @from', 'from', q.acceptedFrom);
  if (q.acceptedBefore !== undefined) add('accepted_at < @before', 'before', q.acceptedBefore);
  if (q.beforeId !== undefined) add(`${key} < @cursor`, 'cursor', q.beforeId);
  if (limit === 'bound') params.limit = q.limit;
  const limitSql = limit === 'bound' ? '@limit' : String(q.limit);
  return {
    sql: `SELECT id, ${json.text(itemSql(q.kind, json.object))} AS item FROM runs WHERE ${where.join(' AND ')} ORDER BY ${key} DESC LIMIT ${limitSql}`,
    params,
  };
}
