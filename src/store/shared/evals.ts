// What both adapters run alike for the evals (port/evals.ts): the statements, written with `@name`
// parameters (SQLite binds them by name, PostgreSQL's adapter numbers them: statements.ts), and the
// rows as the port sees them. Two columns are the truth over the JSON they sit beside: an eval's
// `status` (its item's status is set from it on every read, so a write that only moves the status,
// recordRun's, need not rewrite the item) and a row's `run_id` (recorded once, by a conditional
// write, whatever result the row's JSON holds). JSON is written by JSON.stringify on both stores
// and parsed on read, so both return the same values.
import type { EvalCaseResult, EvalListItem } from '../../domain/types';
import type { EvalEventInput, EvalRecord, EvalStatus, GradedRun, NewEval } from '../port';

/** An eval no driver has ended. */
const UNFINISHED = `status IN ('queued', 'running')`;
/** The eval is still @owner's to drive: every write that moves it on names this. */
export const UNDER_LEASE = `id = @id AND lease_owner = @owner AND ${UNFINISHED}`;
/** Its lease ran out, or it never had one (@now: epoch ms). */
const LEASE_OUT = `(lease_until IS NULL OR lease_until <= @now)`;

/** An eval's columns, named as EvalRecord names them (item still JSON: see recordOf). */
const COLUMNS = `id, workspace_id AS "workspaceId", agent_id AS "agentId", team, status, item, plan, held`;

/** An eval's row as a statement returns it. */
export type EvalRow = Omit<EvalRecord, 'item' | 'results'> & { status: EvalStatus; item: string };
/** A row of eval_runs as a statement returns it. */
export interface EvalRunRow {
  runId: string | null;
  result: string;
}

/** The item as stored, its status the column's. */
export const itemOf = (item: string, status: EvalStatus): EvalListItem => ({ ...(JSON.parse(item) as EvalListItem), status });

/** A row's result as stored, its run the column's. */
const resultOf = (row: EvalRunRow): EvalCaseResult => ({ ...(JSON.parse(row.result) as EvalCaseResult), run_id: row.runId });

export const recordOf = ({ status, item, ...row }: EvalRow, runs: EvalRunRow[]): EvalRecord => ({
  ...row,
  item: itemOf(item, status),
  results: runs.map(resultOf),
});

/** A new eval: queued, holding its reservation, claimable at once (no lease). */
export const INSERT_EVAL = `INSERT INTO evals (id, workspace_id, agent_id, team, status, created_at, finished_at, item, plan, held, lease_owner, lease_until)
  VALUES (@id, @workspace, @agent, @team, 'queued', @created, NULL, @item, @plan, @held, NULL, NULL)`;

export const evalParams = (e: NewEval): Record<string, unknown> => ({
  id: e.id,
  workspace: e.workspaceId,
  agent: e.agentId,
  team: e.team,
  created: e.item.created_at,
  item: JSON.stringify(e.item),
  plan: e.plan,
  held: e.reserve,
});

/** The eval's rows as columns (ordinals, runs, results as JSON), in order. */
export const runColumns = (runs: readonly EvalCaseResult[]) => ({
  ordinals: runs.map((_, i) => i),
  runIds: runs.map((r) => r.run_id ?? null),
  results: runs.map((r) => JSON.stringify(r)),
});

/** The eval of the workspace (@id, @workspace). */
export const FIND_EVAL = `SELECT ${COLUMNS} FROM evals WHERE id = @id AND workspace_id = @workspace`;

/** A page of the agent's evals, newest first: @workspace, @agent, @limit, and the keyset @before_created, @before_id when given. */
export function listEvalsSql(before: boolean): string {
  return `SELECT item, status FROM evals WHERE workspace_id = @workspace AND agent_id = @agent${before ? ' AND (created_at, id) < (@before_created, @before_id)' : ''}
    ORDER BY created_at DESC, id DESC LIMIT CAST(@limit AS INTEGER)`;
}

/** The evals due for a driver by @now, the longest waiting first, at most @limit (SQLite claims each; PostgreSQL locks them: SKIP LOCKED). */
export const DUE_EVALS = `SELECT id FROM evals WHERE ${UNFINISHED} AND ${LEASE_OUT} ORDER BY COALESCE(lease_until, 0), id LIMIT CAST(@limit AS INTEGER)`;

/**
 * The claim of due evals (those `ids` names: `= @id`, or `IN (…)`) for @owner until @until, each
 * only while it is still unfinished and its lease out (another claimer's write is seen).
 */
export const claimEvalsSql = (ids: string) => `UPDATE evals SET lease_owner = @owner, lease_until = @until
  WHERE id ${ids} AND ${UNFINISHED} AND ${LEASE_OUT} RETURNING id, workspace_id AS "workspaceId"`;

/** Lets go of the lease: claimable again at @next. */
export const RELEASE_EVAL = `UPDATE evals SET lease_owner = NULL, lease_until = @next WHERE ${UNDER_LEASE}`;

/** Holds the lease on until @until (a pass that grades for long: judge calls). */
export const RENEW_EVAL = `UPDATE evals SET lease_until = @until WHERE ${UNDER_LEASE}`;

/** Takes @amount (≥ 0) from what the eval holds, if it holds that much; the workspace to credit it to. */
export const RELEASE_HELD = `UPDATE evals SET held = held - @amount WHERE ${UNDER_LEASE} AND held >= @amount AND @amount >= 0
  RETURNING workspace_id AS "workspaceId"`;

/** The eval is running (its first run was accepted): the write that records a run. */
export const MARK_RUNNING = `UPDATE evals SET status = 'running' WHERE ${UNDER_LEASE}`;

/** A row's run, only when it has none. */
export const RECORD_RUN = `UPDATE eval_runs SET run_id = @run WHERE eval_id = @id AND ordinal = @ordinal AND run_id IS NULL`;

/**
 * Graded rows' write on the eval: its item, the judge credits (@judge) taken from what it holds
 * (clamped at zero: the judge's calls are made, whatever the reservation left), and the status
 * moved to running when the item says so. Only that move: an eval ends by finish alone, which gives
 * back what it holds, and a status never goes back.
 */
export const GRADE_EVAL = `UPDATE evals SET item = @item,
    status = CASE WHEN CAST(@status AS TEXT) = 'running' THEN 'running' ELSE status END,
    held = CASE WHEN held > @judge THEN held - @judge ELSE 0 END
  WHERE ${UNDER_LEASE}`;

/** A graded row's result (its run recorded too, when it had none). */
export const GRADE_RUN = `UPDATE eval_runs SET result = @result, run_id = COALESCE(run_id, @run) WHERE eval_id = @id AND ordinal = @ordinal`;

export const gradeParams = (id: string, owner: string, graded: readonly GradedRun[], item: EvalListItem) => ({
  id,
  owner,
  item: JSON.stringify(item),
  status: item.status,
  judge: graded.reduce((sum, g) => sum + g.judgeCredits, 0),
});

/** What an ending eval gives back, and to whom (PostgreSQL locks the row: FOR UPDATE). */
export const ENDING_EVAL = `SELECT workspace_id AS "workspaceId", held FROM evals WHERE ${UNDER_LEASE}`;

/** Ends the eval: its final item and status, nothing held, no lease. */
export const FINISH_EVAL = `UPDATE evals SET status = @status, finished_at = @finished, item = @item, held = 0, lease_owner = NULL, lease_until = NULL
  WHERE ${UNDER_LEASE}`;

export function finishParams(id: string, owner: string, item: EvalListItem): Record<string, unknown> {
  // A driver that ends an eval says how; anything else would leave it unfinished without its credits.
  if (item.status !== 'finished' && item.status !== 'failed') throw new Error(`an eval ends finished or failed, not ${item.status}`);
  return { id, owner, status: item.status, finished: item.finished_at ?? new Date().toISOString(), item: JSON.stringify(item) };
}

/** What prune deletes (@before, @limit), the oldest first; their rows go by the cascade. */
export const PRUNABLE_EVALS = `SELECT id FROM evals WHERE finished_at IS NOT NULL AND finished_at < @before ORDER BY finished_at LIMIT CAST(@limit AS INTEGER)`;

/** Thrown inside an eval's write to undo it whole (a later statement of it found its condition false). */
export class EvalWriteUndone extends Error {}

/** False for a write EvalWriteUndone undid; any other failure as it was. */
export function undone(err: unknown): false {
  if (err instanceof EvalWriteUndone) return false;
  throw err;
}

/** Claimed evals in id order (both adapters answer alike). */
export const byId = (a: { id: string }, b: { id: string }): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Appends an event to the eval's stream, numbered after its last (the writer holds the lease, or creates the eval: one writer). */
export const APPEND_EVAL_EVENT = `INSERT INTO eval_events (eval_id, seq, type, at, data)
  SELECT @id, COALESCE(MAX(seq), 0) + 1, @type, @at, @data FROM eval_events WHERE eval_id = @id`;

export const eventParams = (id: string, event: EvalEventInput) => ({ id, type: event.type, at: new Date().toISOString(), data: JSON.stringify(event.data) });

/** The eval's events after @after, at most @limit. */
export const EVAL_EVENTS = `SELECT seq, type, at, data FROM eval_events WHERE eval_id = @id AND seq > @after ORDER BY seq LIMIT CAST(@limit AS INTEGER)`;
/** The eval's last event. */
export const LAST_EVAL_EVENT = `SELECT seq, type, at, data FROM eval_events WHERE eval_id = @id ORDER BY seq DESC LIMIT 1`;
