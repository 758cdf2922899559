// Statements both adapters run as written, with `@name` parameters: SQLite binds them by name,
// PostgreSQL's adapter numbers them (numberedParams). A statement lives here when its text is the
// same in both dialects; what differs stays in each adapter.
import { FIRES_KEPT } from '../port';

/** A statement written with `@name` parameters in PostgreSQL's `$1, $2, …`, numbered by the order of `names`. */
function numberedParams(sql: string, names: readonly string[]): string {
  return sql.replace(/@(\w+)/g, (_whole, name: string) => {
    const at = names.indexOf(name);
    if (at < 0) throw new Error(`the statement's parameter @${name} is not among ${names.join(', ')}`);
    return `$${at + 1}`;
  });
}

/**
 * Counts one delivery against a trigger's minute: a new minute starts the count again; within the
 * minute the row changes only while below the limit (one conditional upsert: exact under concurrency).
 * Parameters: @id (trigger), @window, @limit.
 */
export const COUNT_DELIVERY_SQL = `INSERT INTO trigger_rate_windows (trigger_id, window_start, count) VALUES (@id, @window, 1)
  ON CONFLICT (trigger_id) DO UPDATE SET
    count = CASE WHEN trigger_rate_windows.window_start = excluded.window_start THEN trigger_rate_windows.count + 1 ELSE 1 END,
    window_start = excluded.window_start
  WHERE trigger_rate_windows.window_start != excluded.window_start OR trigger_rate_windows.count < @limit`;

/**
 * A kv write that keeps a workspace within its number of keys: a new key is inserted only while the
 * workspace has fewer than @limit; an existing one is always updated. (Under PostgreSQL's READ COMMITTED, writes of new keys in the same instant may pass the limit by
 * as many as there are.) The key's own entry is looked for first: both stores evaluate the OR in
 * order, so an update costs one lookup, and only a new key counts the workspace's keys (up to
 * @limit of them).
 */
export const KV_SET_WITHIN_LIMIT = `INSERT INTO kv_entries (workspace_id, key, value, updated_at)
  SELECT @ws, @key, @value, @now
  WHERE EXISTS (SELECT 1 FROM kv_entries WHERE workspace_id = @ws AND key = @key)
     OR (SELECT COUNT(*) FROM kv_entries WHERE workspace_id = @ws) < @limit
  ON CONFLICT (workspace_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;

/** A kv change's event, written only when a trigger of the workspace listens to the kv app (see KvWriteOrigin). */
export const KV_EVENT = `INSERT INTO app_events_pending (id, workspace_id, app, event, payload, chain, created_at)
  SELECT @event_id, @ws, 'kv', @event, @payload, CAST(@chain AS INTEGER), @now
  WHERE EXISTS (SELECT 1 FROM agent_triggers WHERE workspace_id = @ws AND event_app = 'kv')`;

/** An app_event trigger's row names its workspace, app and connection (set where they changed). */
export const SET_TRIGGER_EVENT = `UPDATE agent_triggers SET workspace_id = @ws, event_app = @app, event_connection = @connection
  WHERE id = @id AND agent_id = @agent
    AND (workspace_id IS NOT @ws OR event_app IS NOT @app OR event_connection IS NOT @connection)`;

/**
 * The due schedules, a fair share of each workspace: ranked within their workspace by due time, and
 * taken rank by rank (every workspace's soonest, then every workspace's second, …), so one workspace
 * with hundreds due cannot push another's past this tick. Named parameters @now, @perWorkspace,
 * @limit.
 */
export const DUE_FAIRLY = `SELECT * FROM (
    SELECT s.*, row_number() OVER (PARTITION BY workspace_id ORDER BY next_due_at, id) AS rank
    FROM schedules s WHERE next_due_at IS NOT NULL AND next_due_at <= @now) AS ranked
  WHERE rank <= @perWorkspace ORDER BY rank, next_due_at, id LIMIT CAST(@limit AS INTEGER)`;

/**
 * Deletes a schedule's fire rows older than its newest FIRES_KEPT (run before the fire a claim may
 * add: at most FIRES_KEPT + 1 rows per schedule). Parameter @id.
 */
export const TRIM_FIRES = `DELETE FROM schedule_fires WHERE schedule_id = @id
  AND due_at < (SELECT due_at FROM schedule_fires WHERE schedule_id = @id ORDER BY due_at DESC LIMIT 1 OFFSET ${FIRES_KEPT - 1})`;

/** A statement with `@name` parameters as PostgreSQL takes it: numbered text, and the values of an object of named parameters in that order. */
export interface NumberedStatement {
  text: string;
  values(params: Record<string, unknown>): unknown[];
}

export function numbered(sql: string): NumberedStatement {
  const names: string[] = [];
  for (const match of sql.matchAll(/@(\w+)/g)) if (!names.includes(match[1] as string)) names.push(match[1] as string);
  return {
    text: numberedParams(sql, names),
    values: (params) =>
      names.map((name) => {
        if (!(name in params)) throw new Error(`the statement's parameter @${name} has no value`);
        return params[name];
      }),
  };
}

/** The delivery's row: new, or taking over one older than the repeat window (@since); otherwise 0 rows (a repeat). Its reply is set with the outcome. */
export const CLAIM_DELIVERY = `INSERT INTO webhook_deliveries (trigger_id, delivery_key, run_id, http_status, received_at) VALUES (@trigger, @key, @run, 0, @now)
  ON CONFLICT (trigger_id, delivery_key) DO UPDATE SET run_id = excluded.run_id, http_status = excluded.http_status, received_at = excluded.received_at
  WHERE webhook_deliveries.received_at < @since`;

export const PRIOR_DELIVERY = `SELECT run_id AS "runId", http_status AS "httpStatus" FROM webhook_deliveries WHERE trigger_id = @trigger AND delivery_key = @key`;

export const SET_DELIVERY_STATUS = `UPDATE webhook_deliveries SET http_status = @status WHERE trigger_id = @trigger AND delivery_key = @key`;

/** A run's row as acceptance writes it (parameters: the members of AcceptedRun, shared/runs.ts). */
export const INSERT_RUN = `INSERT INTO runs (id, kind, workspace_id, started_by, target_id, target_version, status, source, trigger_id, request, snapshot,
    step_agents, state, credits_reserved, error, accepted_at, finished_at, agent_slug, agent_name, parent_run_id, visible_to, team, trace_parent)
  VALUES (@id, @kind, @workspace_id, @started_by, @target_id, @target_version, @status, @source, @trigger_id, @request, @snapshot,
    @step_agents, @state, @credits_reserved, @error, @accepted_at, @finished_at, @agent_slug, @agent_name, @parent_run_id, @visible_to, @team, @trace_parent)`;

/** What a run's end sets besides its credits (FINISH_RUN; PostgreSQL's one-statement end, postgres/runs/progress.ts). */
export const RUN_END = `status = @status, error = @error, state = @state, finished_at = @now, lease_owner = NULL, lease_expires_at = NULL,
    -- a cancel that came too late (the run ended first) leaves no trace: one outcome
    cancel_requested_at = CASE WHEN @status = 'cancelled' THEN cancel_requested_at END,
    cancelled_by = CASE WHEN @status = 'cancelled' THEN cancelled_by END`;

/**
 * Ends a running run with what it spent (@spent, never more than it reserved) and lets go of its
 * lease. Each write of a run's progress or end names the status it expects (running): a run that
 * another path ended keeps that end, and the affected-row count says whether the write happened.
 */
export const FINISH_RUN = `UPDATE runs SET ${RUN_END}, credits_spent = @spent, credits_reserved = @spent WHERE id = @id AND status = 'running'`;

/** Parks a running run (no cancel asked for) until its held calls are decided: no worker, no lease, no reservation beyond what it spent. */
export const PARK_RUN = `UPDATE runs SET status = 'awaiting_approval', state = @state, credits_spent = @spent, credits_reserved = @spent,
    approval_expires_at = @expires, lease_owner = NULL, lease_expires_at = NULL
  WHERE id = @id AND status = 'running' AND cancel_requested_at IS NULL`;

/** A held call, waiting for its decision (a call held again, after a resume, waits anew). */
export const HOLD_CALL = `INSERT INTO run_approvals (run_id, call_id, tool, requested_at) VALUES (@run, @call, @tool, @now)
  ON CONFLICT (run_id, call_id) DO UPDATE SET tool = excluded.tool, requested_at = excluded.requested_at,
    decision = NULL, note = NULL, decided_by = NULL, decided_at = NULL`;

/** Asks a running run to stop (once: the first request names who asked). */
export const REQUEST_CANCEL = `UPDATE runs SET cancel_requested_at = @now, cancelled_by = @user
  WHERE id = @id AND status = 'running' AND cancel_requested_at IS NULL`;

/** Cancels a run no worker holds (queued or parked): conditional on the @status read in the same transaction. */
export const CANCEL_IDLE = `UPDATE runs SET status = 'cancelled', finished_at = @now, cancel_requested_at = @now, cancelled_by = @user,
    credits_reserved = credits_spent, lease_owner = NULL, lease_expires_at = NULL
  WHERE id = @id AND status = @status`;

/** The runs a run's tool calls started that have not ended (parameter @parent). */
export const ACTIVE_CHILDREN = `SELECT id FROM runs WHERE parent_run_id = @parent AND status IN ('queued', 'running', 'awaiting_approval')`;

/** The first decision of a held call wins: later ones change nothing (0 rows). */
export const DECIDE_CALL = `UPDATE run_approvals SET decision = @decision, note = @note, decided_by = @user, decided_at = @now
  WHERE run_id = @run AND call_id = @call AND decision IS NULL`;

/** Fails a run parked past its approval_expires_at. */
export const EXPIRE_APPROVAL = `UPDATE runs SET status = 'failed', error = @error, finished_at = @now
  WHERE id = @id AND status = 'awaiting_approval' AND approval_expires_at <= @now`;

/** A parked run's state with a decision written in; with @resume (1) the run is queued again. */
export const DECIDED_STATE = `UPDATE runs SET state = @state,
    status = CASE WHEN @resume = 1 THEN 'queued' ELSE status END,
    approval_expires_at = CASE WHEN @resume = 1 THEN NULL ELSE approval_expires_at END
  WHERE id = @id AND status = 'awaiting_approval'`;

/** A claimed RunRow's columns, explicitly: never the lease columns nor the projection's agent columns, which are the adapter's own. */
export const RUN_COLUMNS = [
  ...[
    'id',
    'kind',
    'workspace_id',
    'started_by',
    'target_id',
    'target_version',
    'status',
    'source',
    'trigger_id',
    'request',
    'snapshot',
    'step_agents',
    'state',
  ],
  ...['credits_reserved', 'credits_spent', 'error', 'accepted_at', 'started_at', 'finished_at', 'cancel_requested_at', 'cancelled_by', 'approval_expires_at'],
  'trace_parent',
  'team',
  'parent_run_id',
  'visible_to',
] as const;

/** A scheduler's claim of a due time: the schedule moves from @expected to @next; 0 rows when another process moved it first. */
export const ADVANCE_SCHEDULE = `UPDATE schedules SET next_due_at = @next WHERE id = @id AND next_due_at = @expected`;

export const INSERT_FIRE = `INSERT INTO schedule_fires (schedule_id, due_at, outcome, run_id, detail, recorded_at) VALUES (@id, @due, @outcome, @run, @detail, @now)`;

/** A due time recorded with its run; a poll's due time has its row already (outcome `polling`), which the run's outcome replaces. */
export const RECORD_FIRE = `${INSERT_FIRE}
  ON CONFLICT (schedule_id, due_at) DO UPDATE SET outcome = excluded.outcome, run_id = excluded.run_id, detail = excluded.detail
  WHERE schedule_fires.outcome = 'polling'`;

export const MARK_FIRED = `UPDATE schedules SET last_fired_at = @now, last_run_id = @run WHERE id = @id`;
