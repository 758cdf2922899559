// Runs and credits. Credits are reserved when a run is accepted (its minimum cost) and charged
// as it spends; whatever was reserved and not spent goes back when it ends. Every debit is one
// conditional UPDATE, so a balance never goes below zero, whatever the concurrency.
import type { Db } from './db';
import type { GroupCommit } from './group-commit';
import { BudgetedMap } from './budgeted-map';
import { scheduleWrites, type ScheduledFire } from './schedules';
import { triggerStatusVersions } from './trigger-status';
import { runLists, type RunListQuery, type RunListRow } from './run-lists';
import { FINAL_EVENT, runEventWrites, type RunEventInput, type RunEventRow } from './run-events';

export type RunKind = 'agent' | 'workflow';
export type RunStatus = 'queued' | 'running' | 'awaiting_approval' | 'succeeded' | 'failed' | 'refused' | 'cancelled';
/** How a worker ends a run. */
export type RunEnd = 'succeeded' | 'failed' | 'cancelled';
/** What a save of a running run's progress found: saved, saved and asked to stop, or not running (ended by another path). */
export type ProgressOutcome = 'saved' | 'cancel_requested' | 'not_running';

/** A tool call held by an approval policy, as stored with its decision. */
export interface ApprovalRow {
  run_id: string;
  call_id: string;
  tool: string;
  requested_at: string;
  decision: 'approve' | 'reject' | null;
  note: string | null;
  decided_by: string | null;
  decided_at: string | null;
}

export type CancelOutcome =
  /** Ended as cancelled by this request or an earlier one. */
  | { outcome: 'cancelled' }
  /** Running: the cancel is recorded (now or before); the worker ends it before its next step. */
  | { outcome: 'requested' }
  /** It ended otherwise first. */
  | { outcome: 'finished'; status: RunStatus }
  | { outcome: 'missing' };

export type DecideOutcome =
  /** Recorded; other held calls of the run wait for their decision. */
  | { outcome: 'decided' }
  /** Recorded, and it was the last: the run is queued again. */
  | { outcome: 'resumed' }
  | { outcome: 'decided_before'; approval: ApprovalRow }
  | { outcome: 'not_waiting'; status: RunStatus }
  | { outcome: 'no_call' };

/** What a worker hands over when it parks a run whose tool calls the approval policy held. */
export interface Parking {
  state: unknown;
  spent: number;
  calls: { id: string; tool: string }[];
  expiresAt: string;
  events: RunEventInput[];
}

/** A worker's claim on the runs it executes: who holds them, and for how long unless renewed. */
export interface Lease {
  owner: string;
  ms: number;
}

export interface RunRow {
  id: string;
  kind: RunKind;
  workspace_id: string;
  started_by: string;
  target_id: string;
  target_version: number | null;
  status: RunStatus;
  source: string;
  /** The trigger that started the run (webhook, poll), or null. */
  trigger_id: string | null;
  request: string;
  snapshot: string | null;
  /** A workflow run's agents (slug → document, JSON) as stored when it was accepted; null without agent steps. */
  step_agents: string | null;
  state: string;
  credits_reserved: number;
  credits_spent: number;
  error: string | null;
  accepted_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** When a cancel was asked for, and by whom. */
  cancel_requested_at: string | null;
  cancelled_by: string | null;
  /** While awaiting approval: when the run fails unless decided. */
  approval_expires_at: string | null;
}

export interface NewRun {
  id: string;
  kind: RunKind;
  workspaceId: string;
  startedBy: string;
  targetId: string;
  targetVersion: number;
  /** `test`, `webhook`, `schedule` or `poll`. */
  source: string;
  /** The trigger that started it (webhook, poll). */
  triggerId?: string;
  /**
   * A webhook delivery's id (`webhook-id` or `Idempotency-Key`): recorded with the run, keyed by
   * (trigger, id), so a repeat within `repeatWindowMs` starts nothing (the outcome names the first run).
   */
  delivery?: { key: string; since: string };
  /** A schedule's or poll's due time, decided in the same write as the run (see ScheduledFire). */
  fire?: ScheduledFire;
  /**
   * Counts this delivery against its trigger's minute `window` (a number naming the minute), at
   * most `limit` a window, in the same write: a repeated delivery (above) is never counted, and past
   * the limit nothing is written ('rate_limited').
   */
  rate?: { window: number; limit: number };
  request: unknown;
  /** The document that runs, as stored (its JSON, not re-serialised). */
  snapshotJson: string;
  /** A workflow run's agents as stored at acceptance (JSON of slug → document), for its agent steps. */
  stepAgentsJson?: string;
  /** An agent run's agent, as its projections name it (kept in agent_slug and agent_name; without it, polls read the table). */
  agent?: { slug: string; name: string };
  state: unknown;
  /** Credits the run needs at least; reserved on acceptance, or the run is refused. */
  minimumCost: number;
  /** The balance of a workspace seen for the first time. */
  initialCredits: number;
}

export type AcceptOutcome =
  | { status: 'queued' }
  | { status: 'refused'; balance: number }
  /** The delivery was received before (since `delivery.since`): nothing was written; its run and reply. */
  | { status: 'repeated'; runId: string; httpStatus: number }
  /** Another process decided the schedule's due time (or the poll's output) first: nothing was written. */
  | { status: 'raced' }
  /** The trigger received its `rate.limit` deliveries this window: nothing was written. */
  | { status: 'rate_limited' };

/** Thrown inside an accept's write to undo it whole (the delivery's row included) when the trigger's rate is spent. */
export class RateLimitReached extends Error {}

/**
 * Counts one delivery against a trigger's minute: a new minute starts the count again; within the
 * minute the row changes only while below the limit (one conditional upsert: exact under concurrency).
 * Parameters: @id (trigger), @window, @limit. Both dialects read it alike.
 */
export const COUNT_DELIVERY_SQL = `INSERT INTO trigger_rate_windows (trigger_id, window_start, count) VALUES (@id, @window, 1)
  ON CONFLICT (trigger_id) DO UPDATE SET
    count = CASE WHEN trigger_rate_windows.window_start = excluded.window_start THEN trigger_rate_windows.count + 1 ELSE 1 END,
    window_start = excluded.window_start
  WHERE trigger_rate_windows.window_start != excluded.window_start OR trigger_rate_windows.count < @limit`;

export interface RunRepository {
  accept(run: NewRun, refusal: (balance: number) => string): Promise<AcceptOutcome>;
  /** The run as its projection needs it: `snapshot` holds only an agent run's agent `slug` and `name` (null for workflow runs), `step_agents` is null. */
  find(id: string): Promise<RunRow | null>;
  /**
   * Moves the oldest queued run of a workspace with fewer than `cap` runs executing to running under
   * `lease`, and returns it. Of concurrent claimers (any process), one gets each run.
   */
  claimNext(lease: Lease, cap: number): Promise<RunRow | null>;
  /** Moves run `id` to running under `lease` if it is still queued and its workspace has fewer than `cap` executing; false otherwise. */
  claim(id: string, lease: Lease, cap: number): Promise<boolean>;
  /**
   * Extends, by `lease.ms` from now, the leases `lease.owner` still holds among these runs, and
   * returns their ids: a run missing from the answer was ended by another path (a takeover, a
   * cancel of a queued run) and its worker stops.
   */
  renewLeases(lease: Lease, ids: readonly string[]): Promise<string[]>;
  /**
   * Fails the running runs that no live worker holds, with `message`, returning what they reserved
   * and did not spend; how many. Those whose lease has passed (PostgreSQL: by the database's
   * clock). With `self`, the owner name of a runner that is starting, SQLite also fails the runs
   * any other owner holds: the serve lock makes the starting process the file's only server, so
   * their owner stopped, and they need not wait for their leases (PostgreSQL ignores it: other
   * replicas' runs are live).
   */
  recoverAbandoned(message: string, self?: string): Promise<number>;
  /**
   * At shutdown, once the grace period is over: fails the runs `owner` still holds with `message`
   * (unspent reservations returned), so that no replica waits for their leases to pass; how many.
   */
  releaseAll(owner: string, message: string): Promise<number>;
  /**
   * Calls `listener` when another process may have queued a run (PostgreSQL: a NOTIFY from any
   * replica, and after the listening connection is re-established; SQLite: never, its one server
   * queues its runs itself).
   */
  onQueued(listener: () => void): void;
  /**
   * Saves the run's progress and the credits it has spent so far (never more than it reserved), as
   * `current()` gives them when the write's group commits: a worker that reports progress several
   * times before then needs one write, and it carries the latest state, with the events reported
   * since the last save. Only a `running` run is changed: 'not_running' when another path ended it,
   * 'cancel_requested' when it was saved and a cancel has been asked for (by any process).
   */
  saveState(id: string, current: () => { state: unknown; spent: number; events?: RunEventInput[] }): Promise<ProgressOutcome>;
  /** Moves `amount` credits from the workspace's balance to a running run's reservation. False when the balance cannot cover it or the run is not running. */
  reserveMore(id: string, amount: number): Promise<boolean>;
  /**
   * Ends a `running` run with what it spent, and returns what it reserved and did not spend to the
   * workspace. False, changing nothing, when the run is not running: another path ended it first,
   * and its end (with its refund) stands.
   */
  finish(id: string, status: RunEnd, error: string | null, state: unknown, spent: number, now: string, events?: RunEventInput[]): Promise<boolean>;
  /**
   * Parks a running run whose tool calls wait for approval: it holds no worker and keeps no
   * reservation (what it did not spend goes back) until they are decided. 'cancel_requested' when
   * a cancel came first (nothing written: end it as cancelled); 'not_running' when another path ended it.
   */
  park(id: string, parking: Parking, now: string): Promise<'parked' | ProgressOutcome>;
  /** Cancels a queued or parked run at once, or asks a running one to stop (see CancelOutcome). */
  cancel(id: string, userId: string, now: string): Promise<CancelOutcome>;
  /** Decides a held call (one conditional write: the first decision wins); the last decision of a run queues it again. */
  decide(runId: string, callId: string, decision: 'approve' | 'reject', note: string | null, userId: string, now: string): Promise<DecideOutcome>;
  /** Fails runs parked past their approval_expires_at with `message`; how many. */
  expireApprovals(message: string, now: string): Promise<number>;
  /** A run's events after `seq`, oldest first (at most `max`). */
  events(runId: string, seq: number, max: number): Promise<RunEventRow[]>;
  /** A run's last event's number and type, or null before its first. */
  lastEvent(runId: string): Promise<{ seq: number; type: string } | null>;
  /** Calls `listener` with a run's id after a write that added events to it committed. */
  onEvents(listener: (runId: string) => void): void;
  /** Deletes up to `batch` runs that finished before `before`, with their events and approvals; how many. */
  pruneFinished(before: string, batch: number): Promise<number>;
  /** A page of a workspace's runs of one kind, newest first (see run-lists.ts). */
  list(query: RunListQuery): Promise<RunListRow[]>;
  /** When each of these triggers last started a run (refusals do not count), by trigger id. */
  lastStartedBy(triggerIds: string[]): Promise<Map<string, string>>;
}

/**
 * The worker's next run: the oldest queued one whose workspace has fewer than @cap runs executing
 * (by the partial indexes runs_queued and runs_running, migration 007).
 */
export const NEXT_QUEUED_SQL = `SELECT id FROM runs WHERE status = 'queued' AND workspace_id NOT IN
  (SELECT workspace_id FROM runs WHERE status = 'running' GROUP BY workspace_id HAVING COUNT(*) >= @cap)
  ORDER BY accepted_at, id LIMIT 1`;
/**
 * Running runs no live worker holds (by a partial index on running runs): the lease passed, or, at a
 * runner's start (@self set), another owner holds it — the serve lock makes the starting process the
 * file's only server, so that owner stopped, and its runs need not wait for their leases.
 */
export const ABANDONED_SQL = `SELECT id, workspace_id, credits_reserved, credits_spent FROM runs WHERE status = 'running'
  AND (lease_expires_at IS NULL OR lease_expires_at < @now OR (@self IS NOT NULL AND lease_owner IS NOT @self))`;

/** The memory the runs accepted lately may take for their polls, at most (about: see `sizeOf`). */
export const RECENT_RUNS_BYTES = 2 * 1024 * 1024;
/** What a run's row takes besides its JSON texts: the object, its ids, stamps and numbers. */
const ROW_OVERHEAD_BYTES = 512;

export function runRepository(db: Db, commit: GroupCommit): RunRepository {
  const ensureWorkspace = db.prepare('INSERT OR IGNORE INTO workspaces (id, credits, created_at) VALUES (?, ?, ?)');
  const debit = db.prepare('UPDATE workspaces SET credits = credits - @amount WHERE id = @workspace AND credits >= @amount');
  const credit = db.prepare('UPDATE workspaces SET credits = credits + @amount WHERE id = @workspace');
  const balance = db.prepare('SELECT credits FROM workspaces WHERE id = ?').pluck();
  const insert = db.prepare(
    `INSERT INTO runs (id, kind, workspace_id, started_by, target_id, target_version, status, source, trigger_id, request, snapshot, step_agents, state, credits_reserved, error, accepted_at, finished_at, agent_slug, agent_name)
     VALUES (@id, @kind, @workspace_id, @started_by, @target_id, @target_version, @status, @source, @trigger_id, @request, @snapshot, @step_agents, @state, @credits_reserved, @error, @accepted_at, @finished_at, @agent_slug, @agent_name)`,
  );
  // The delivery's row: new, or taking over one older than the repeat window; otherwise 0 rows (a repeat).
  const claimDelivery = db.prepare(
    `INSERT INTO webhook_deliveries (trigger_id, delivery_key, run_id, http_status, received_at) VALUES (@trigger, @key, @run, @status, @now)
     ON CONFLICT (trigger_id, delivery_key) DO UPDATE SET run_id = excluded.run_id, http_status = excluded.http_status, received_at = excluded.received_at
     WHERE received_at < @since`,
  );
  const countDelivery = db.prepare(COUNT_DELIVERY_SQL);
  const schedules = scheduleWrites(db, commit);
  const statusVersions = triggerStatusVersions(db, commit);
  const setDeliveryStatus = db.prepare('UPDATE webhook_deliveries SET http_status = ? WHERE trigger_id = ? AND delivery_key = ?');
  const priorDelivery = db.prepare('SELECT run_id AS runId, http_status AS httpStatus FROM webhook_deliveries WHERE trigger_id = ? AND delivery_key = ?');
  const byId = db.prepare('SELECT * FROM runs WHERE id = ?');
  // What a run's credit writes need of it (not its snapshot, the whole document).
  const creditsOf = db.prepare('SELECT workspace_id, credits_reserved FROM runs WHERE id = ?');
  type RunCredits = Pick<RunRow, 'workspace_id' | 'credits_reserved'>;
  // A poll reads this many times per run: the snapshot (the whole document) stays in the database
  // (and one that is not JSON, as in a damaged row, shows as no agent rather than failing the read).
  const forProjection = db.prepare(
    `SELECT id, kind, workspace_id, started_by, target_id, target_version, status, source, trigger_id, request,
       CASE WHEN agent_slug IS NOT NULL THEN json_object('slug', agent_slug, 'name', agent_name) END AS snapshot,
       NULL AS step_agents, state, credits_reserved, credits_spent, error, accepted_at, started_at, finished_at,
       cancel_requested_at, cancelled_by, approval_expires_at
     FROM runs WHERE id = ?`,
  );
  const nextQueued = db.prepare(NEXT_QUEUED_SQL).pluck();
  const markRunning = db.prepare(
    `UPDATE runs SET status = 'running', started_at = @now, lease_owner = @owner, lease_expires_at = @until WHERE id = @id AND status = 'queued'`,
  );
  // The claim of a run handed over in memory: conditional on its status and on its workspace's cap.
  const claimIfFair = db.prepare(
    `UPDATE runs SET status = 'running', started_at = @now, lease_owner = @owner, lease_expires_at = @until WHERE id = @id AND status = 'queued'
       AND (SELECT COUNT(*) FROM runs AS r WHERE r.status = 'running' AND r.workspace_id = runs.workspace_id) < @cap`,
  );
  const renew = db.prepare(`UPDATE runs SET lease_expires_at = @until WHERE id = @id AND status = 'running' AND lease_owner = @owner`);
  const abandoned = db.prepare(ABANDONED_SQL);
  const heldBy = db.prepare(`SELECT id, workspace_id, credits_reserved, credits_spent FROM runs WHERE status = 'running' AND lease_owner = ?`);
  // Each write of a run's progress or end names the status it expects (running): a run that
  // another path ended keeps that end, and the affected-row count says whether the write happened.
  // It also says whether a cancel was asked for since (by any process): the worker stops then.
  const saveState = db.prepare(
    `UPDATE runs SET state = ?, credits_spent = MIN(?, credits_reserved) WHERE id = ? AND status = 'running' RETURNING cancel_requested_at`,
  );
  const reserveMore = db.prepare(`UPDATE runs SET credits_reserved = credits_reserved + @amount WHERE id = @id AND status = 'running'`);
  const unreserve = db.prepare('UPDATE runs SET credits_reserved = credits_reserved - @amount WHERE id = @id');
  const finish = db.prepare(
    `UPDATE runs SET status = @status, error = @error, state = @state, finished_at = @now,
       credits_spent = @spent, credits_reserved = @spent, lease_owner = NULL, lease_expires_at = NULL,
       -- a cancel that came too late (the run ended first) leaves no trace: one outcome
       cancel_requested_at = CASE WHEN @status = 'cancelled' THEN cancel_requested_at END,
       cancelled_by = CASE WHEN @status = 'cancelled' THEN cancelled_by END
     WHERE id = @id AND status = 'running'`,
  );
  const park = db.prepare(
    `UPDATE runs SET status = 'awaiting_approval', state = @state, credits_spent = @spent, credits_reserved = @spent, approval_expires_at = @expires,
       lease_owner = NULL, lease_expires_at = NULL
     WHERE id = @id AND status = 'running' AND cancel_requested_at IS NULL`,
  );
  const cancelRequestedOf = db.prepare('SELECT cancel_requested_at FROM runs WHERE id = ? AND status = ?').pluck();
  const holdCall = db.prepare(
    `INSERT INTO run_approvals (run_id, call_id, tool, requested_at) VALUES (@run, @call, @tool, @now)
     ON CONFLICT (run_id, call_id) DO UPDATE SET tool = excluded.tool, requested_at = excluded.requested_at,
       decision = NULL, note = NULL, decided_by = NULL, decided_at = NULL`,
  );
  const controlOf = db.prepare('SELECT status, workspace_id, credits_reserved, credits_spent, cancel_requested_at, state, approval_expires_at FROM runs WHERE id = ?');
  type RunControl = Pick<RunRow, 'status' | 'workspace_id' | 'credits_reserved' | 'credits_spent' | 'cancel_requested_at' | 'state' | 'approval_expires_at'>;
  // Cancels a run no worker holds (queued or parked): conditional on the status read in the same transaction.
  const cancelIdle = db.prepare(
    `UPDATE runs SET status = 'cancelled', finished_at = @now, cancel_requested_at = @now, cancelled_by = @user,
       credits_reserved = credits_spent WHERE id = @id AND status = @status`,
  );
  const requestCancel = db.prepare(
    `UPDATE runs SET cancel_requested_at = @now, cancelled_by = @user WHERE id = @id AND status = 'running' AND cancel_requested_at IS NULL`,
  );
  const approvalOf = db.prepare('SELECT * FROM run_approvals WHERE run_id = ? AND call_id = ?');
  const decideCall = db.prepare(
    `UPDATE run_approvals SET decision = @decision, note = @note, decided_by = @user, decided_at = @now
     WHERE run_id = @run AND call_id = @call AND decision IS NULL`,
  );
  const undecided = db.prepare('SELECT COUNT(*) FROM run_approvals WHERE run_id = ? AND decision IS NULL').pluck();
  const setParkedState = db.prepare(`UPDATE runs SET state = ? WHERE id = ? AND status = 'awaiting_approval'`);
  const resume = db.prepare(`UPDATE runs SET status = 'queued', state = ?, approval_expires_at = NULL WHERE id = ? AND status = 'awaiting_approval'`);
  const parkedPast = db.prepare(`SELECT id FROM runs WHERE status = 'awaiting_approval' AND approval_expires_at <= ? ORDER BY approval_expires_at LIMIT 100`).pluck();
  const expire = db.prepare(
    `UPDATE runs SET status = 'failed', error = @error, finished_at = @now WHERE id = @id AND status = 'awaiting_approval' AND approval_expires_at <= @now`,
  );
  const finishedBefore = db.prepare('SELECT id FROM runs WHERE finished_at IS NOT NULL AND finished_at < ? ORDER BY finished_at LIMIT ?').pluck();
  const deleteRun = db.prepare('DELETE FROM runs WHERE id = ?');
  const deleteApprovals = db.prepare('DELETE FROM run_approvals WHERE run_id = ?');
  const events = runEventWrites(db);
  const eventListeners: ((runId: string) => void)[] = [];
  /** Tells the listeners that run `id` has new events (call after their write committed). */
  const announce = (id: string) => {
    for (const listener of eventListeners) listener(id);
  };
  /** Announces run `id` once `write` (which added events to it) committed. */
  const announcing = <T>(id: string, write: Promise<T>): Promise<T> =>
    write.then((value) => {
      announce(id);
      return value;
    });
  const failOne = db.prepare(
    `UPDATE runs SET status = 'failed', error = @error, finished_at = @now, credits_reserved = credits_spent,
       lease_owner = NULL, lease_expires_at = NULL WHERE id = @id AND status = 'running'`,
  );

  // The runs accepted lately, as `find` returns them (a poll most often reads a run just started).
  // This process is the only writer of runs, and every write below changes the entry with the row,
  // inside its transaction (a group that fails to commit clears them all), so an entry is always the
  // committed row; older runs are read from the table. Entries are replaced, never changed in place.
  const sizeOf = (row: RunRow) => ROW_OVERHEAD_BYTES + row.request.length + row.state.length + (row.snapshot?.length ?? 0) + (row.error?.length ?? 0);
  const recent = new BudgetedMap<string, RunRow>(RECENT_RUNS_BYTES, sizeOf);
  commit.onRollback(() => recent.clear());
  const keep = (row: RunRow) => recent.set(row.id, row); // a new run goes last; a changed one keeps its place
  const amend = (id: string, change: (row: RunRow) => Partial<RunRow>) => {
    const row = recent.get(id);
    if (row) keep({ ...row, ...change(row) });
  };

  // The …Tx functions are the writes' work: each runs in its own savepoint (commit.run), whole or not at all.
  const acceptTx = (run: NewRun, refusal: (balance: number) => string): AcceptOutcome => {
    const now = new Date().toISOString();
    ensureWorkspace.run(run.workspaceId, run.initialCredits, now);
    if (run.delivery) {
      const key = { trigger: run.triggerId, key: run.delivery.key };
      // Claimed before anything is spent: a repeat writes nothing. Its reply is set below, with the outcome.
      if (claimDelivery.run({ ...key, run: run.id, status: 0, now, since: run.delivery.since }).changes !== 1) {
        return { status: 'repeated', ...(priorDelivery.get(key.trigger, key.key) as { runId: string; httpStatus: number }) };
      }
    }
    if (run.rate && countDelivery.run({ id: run.triggerId, ...run.rate }).changes !== 1) throw new RateLimitReached(); // the delivery's row goes with the savepoint
    if (run.fire && !schedules.take(run.fire, now)) return { status: 'raced' };
    const reserved = debit.run({ amount: run.minimumCost, workspace: run.workspaceId }).changes === 1;
    const row = {
      id: run.id,
      kind: run.kind,
      workspace_id: run.workspaceId,
      started_by: run.startedBy,
      target_id: run.targetId,
      target_version: run.targetVersion,
      source: run.source,
      trigger_id: run.triggerId ?? null,
      request: JSON.stringify(run.request),
      snapshot: run.snapshotJson,
      step_agents: run.stepAgentsJson ?? null,
      state: JSON.stringify(run.state),
      accepted_at: now,
    };
    const left = reserved ? null : (balance.get(run.workspaceId) as number);
    const outcome = left === null
      ? { status: 'queued' as const, credits_reserved: run.minimumCost, error: null, finished_at: null }
      : { status: 'refused' as const, credits_reserved: 0, error: refusal(left), finished_at: now };
    insert.run({ ...row, ...outcome, agent_slug: run.agent?.slug ?? null, agent_name: run.agent?.name ?? null });
    events.append(run.id, [left === null ? { type: 'run.queued', data: { status: 'queued' } } : finalEvent('refused', outcome.error)], now);
    if (run.delivery) setDeliveryStatus.run(left === null ? 202 : 409, run.triggerId, run.delivery.key);
    if (run.fire) schedules.fired(run.fire, left === null ? 'fired' : 'refused', run.id, outcome.error, now);
    if (run.triggerId) statusVersions.bumpAgent(run.targetId); // its trigger's last_fired_at
    // An agent run is kept only when its accept names the agent (as the projection query would).
    if (run.kind === 'workflow' || run.agent) {
      const snapshot = run.agent ? JSON.stringify({ slug: run.agent.slug, name: run.agent.name }) : null;
      keep({ ...row, ...outcome, snapshot, step_agents: null, credits_spent: 0, started_at: null, cancel_requested_at: null, cancelled_by: null, approval_expires_at: null });
    }
    return left === null ? { status: 'queued' } : { status: 'refused', balance: left };
  };

  /** The lease columns of a claim made now. */
  const leaseOf = (lease: Lease, now: string) => ({ owner: lease.owner, until: new Date(Date.parse(now) + lease.ms).toISOString() });

  const claimNextTx = (lease: Lease, cap: number): RunRow | null => {
    const id = nextQueued.get({ cap }) as string | undefined;
    if (!id) return null;
    const now = new Date().toISOString();
    markRunning.run({ id, now, ...leaseOf(lease, now) });
    events.append(id, [{ type: 'run.started', data: { status: 'running' } }], now);
    amend(id, () => ({ status: 'running', started_at: now }));
    return byId.get(id) as RunRow;
  };

  const claimTx = (id: string, lease: Lease, cap: number): boolean => {
    const now = new Date().toISOString();
    if (claimIfFair.run({ id, now, cap, ...leaseOf(lease, now) }).changes !== 1) return false;
    events.append(id, [{ type: 'run.started', data: { status: 'running' } }], now);
    amend(id, () => ({ status: 'running', started_at: now }));
    return true;
  };

  const reserveMoreTx = (id: string, amount: number): boolean => {
    const run = creditsOf.get(id) as RunCredits | undefined;
    if (!run || reserveMore.run({ id, amount }).changes !== 1) return false; // not running
    if (debit.run({ amount, workspace: run.workspace_id }).changes !== 1) {
      unreserve.run({ id, amount }); // the balance cannot cover it: the reservation goes back as it was
      return false;
    }
    amend(id, (r) => ({ credits_reserved: r.credits_reserved + amount }));
    return true;
  };

  const finishTx = (id: string, status: RunEnd, error: string | null, state: string, spent: number, now: string, more: RunEventInput[]): boolean => {
    const run = creditsOf.get(id) as RunCredits | undefined;
    if (!run) return false;
    const charged = Math.min(spent, run.credits_reserved);
    if (finish.run({ id, status, error, state, spent: charged, now }).changes !== 1) return false; // not running
    const unspent = run.credits_reserved - charged;
    if (unspent > 0) credit.run({ amount: unspent, workspace: run.workspace_id });
    events.append(id, [...more, finalEvent(status, error)], now);
    amend(id, () => ({
      status,
      error,
      state,
      finished_at: now,
      credits_spent: charged,
      credits_reserved: charged,
      ...(status !== 'cancelled' && { cancel_requested_at: null, cancelled_by: null }),
    }));
    return true;
  };

  type RunningCredits = Pick<RunRow, 'id' | 'workspace_id' | 'credits_reserved' | 'credits_spent'>;
  /** Fails these running runs with `message`, their unspent reservations returned; the ids it ended. */
  const failRunningTx = (rows: RunningCredits[], message: string): string[] => {
    const now = new Date().toISOString();
    const ended: string[] = [];
    for (const run of rows) {
      if (failOne.run({ id: run.id, error: message, now }).changes !== 1) continue;
      ended.push(run.id);
      const unspent = run.credits_reserved - run.credits_spent;
      if (unspent > 0) credit.run({ amount: unspent, workspace: run.workspace_id });
      events.append(run.id, [finalEvent('failed', message)], now);
      amend(run.id, (r) => ({ status: 'failed', error: message, finished_at: now, credits_reserved: r.credits_spent }));
    }
    return ended;
  };
  /**
   * Fails the running runs `select` finds (in the write's transaction); announces them once committed.
   * Recovery asks every second and almost always finds none: a read says so without a write (and its fsync).
   */
  const failRunning = async (select: () => RunningCredits[], message: string): Promise<number> => {
    if (!select().length) return 0;
    const ended = await commit.run(() => failRunningTx(select(), message));
    ended.forEach(announce);
    return ended.length;
  };

  const parkTx = (id: string, parking: Parking, state: string, now: string): 'parked' | ProgressOutcome => {
    const run = creditsOf.get(id) as RunCredits | undefined;
    if (!run) return 'not_running';
    const charged = Math.min(parking.spent, run.credits_reserved);
    if (park.run({ id, state, spent: charged, expires: parking.expiresAt }).changes !== 1) {
      return cancelRequestedOf.get(id, 'running') ? 'cancel_requested' : 'not_running';
    }
    const unspent = run.credits_reserved - charged;
    if (unspent > 0) credit.run({ amount: unspent, workspace: run.workspace_id });
    for (const call of parking.calls) holdCall.run({ run: id, call: call.id, tool: call.tool, now });
    const waiting = { type: 'run.awaiting_approval', data: { status: 'awaiting_approval', calls: parking.calls, expires_at: parking.expiresAt } };
    events.append(id, [...parking.events, waiting], now);
    amend(id, () => ({ status: 'awaiting_approval', state, credits_spent: charged, credits_reserved: charged, approval_expires_at: parking.expiresAt }));
    return 'parked';
  };

  const cancelTx = (id: string, user: string, now: string): CancelOutcome => {
    const run = controlOf.get(id) as RunControl | undefined;
    if (!run) return { outcome: 'missing' };
    if (run.status === 'cancelled') return { outcome: 'cancelled' };
    if (run.status === 'running') {
      if (requestCancel.run({ id, user, now }).changes === 1) {
        events.append(id, [{ type: 'run.cancel_requested', data: { cancelled_by: user } }], now);
        amend(id, () => ({ cancel_requested_at: now, cancelled_by: user }));
      }
      return { outcome: 'requested' };
    }
    if (run.status !== 'queued' && run.status !== 'awaiting_approval') return { outcome: 'finished', status: run.status };
    if (cancelIdle.run({ id, user, now, status: run.status }).changes !== 1) return { outcome: 'finished', status: run.status };
    const unspent = run.credits_reserved - run.credits_spent;
    if (unspent > 0) credit.run({ amount: unspent, workspace: run.workspace_id });
    events.append(id, [{ ...finalEvent('cancelled', null), data: { status: 'cancelled', error: null, cancelled_by: user } }], now);
    amend(id, (r) => ({ status: 'cancelled', finished_at: now, cancel_requested_at: now, cancelled_by: user, credits_reserved: r.credits_spent }));
    return { outcome: 'cancelled' };
  };

  const decideTx = (runId: string, callId: string, decision: 'approve' | 'reject', note: string | null, user: string, now: string): DecideOutcome => {
    const approval = approvalOf.get(runId, callId) as ApprovalRow | undefined;
    if (!approval) return { outcome: 'no_call' };
    if (approval.decision !== null) return { outcome: 'decided_before', approval };
    const run = controlOf.get(runId) as RunControl;
    if (run.status !== 'awaiting_approval') return { outcome: 'not_waiting', status: run.status };
    if ((run.approval_expires_at as string) <= now) {
      expireTx(runId, APPROVAL_EXPIRED, now);
      return { outcome: 'not_waiting', status: 'failed' };
    }
    if (decideCall.run({ run: runId, call: callId, decision, note, user, now }).changes !== 1) {
      return { outcome: 'decided_before', approval: approvalOf.get(runId, callId) as ApprovalRow };
    }
    // The projection shows the decision at once; the worker that resumes the run reads it from the state.
    const state = JSON.parse(run.state) as { tool_calls?: { id: string; status: string; approval?: unknown }[] };
    for (const call of state.tool_calls ?? []) {
      if (call.id === callId && call.status === 'awaiting_approval') call.approval = { decision, note, decided_by: user, decided_at: now };
    }
    const json = JSON.stringify(state);
    const last = undecided.get(runId) === 0;
    const decided = { type: 'approval.decided', data: { call_id: callId, decision, decided_by: user } };
    if (last) {
      resume.run(json, runId);
      events.append(runId, [decided, { type: 'run.queued', data: { status: 'queued' } }], now);
      amend(runId, () => ({ status: 'queued', state: json, approval_expires_at: null }));
    } else {
      setParkedState.run(json, runId);
      events.append(runId, [decided], now);
      amend(runId, () => ({ state: json }));
    }
    return { outcome: last ? 'resumed' : 'decided' };
  };

  const expireTx = (id: string, message: string, now: string): boolean => {
    if (expire.run({ id, error: message, now }).changes !== 1) return false;
    events.append(id, [finalEvent('failed', message)], now);
    amend(id, () => ({ status: 'failed', error: message, finished_at: now }));
    return true;
  };

  const pruneTx = (before: string, batch: number): number => {
    const ids = finishedBefore.all(before, batch) as string[];
    for (const id of ids) {
      events.remove(id);
      deleteApprovals.run(id);
      deleteRun.run(id);
      recent.delete(id);
    }
    return ids.length;
  };

  const lastStarted = db.prepare(`SELECT MAX(accepted_at) FROM runs WHERE trigger_id = ? AND status != 'refused'`).pluck();
  const list = runLists(db);
  return {
    list: async (query) => list(query),
    lastStartedBy: async (triggerIds) => {
      const found = new Map<string, string>();
      for (const id of triggerIds) {
        const at = lastStarted.get(id) as string | null;
        if (at) found.set(id, at);
      }
      return found;
    },
    accept: (run, refusal) => announcing(run.id, commit.run(() => acceptTx(run, refusal)).catch(rateLimited)),
    find: async (id) => recent.get(id) ?? (forProjection.get(id) as RunRow | undefined) ?? null,
    // The workers' writes are acknowledged once committed, not once on disk (see Ack in group-commit.ts).
    claimNext: async (lease, cap) => {
      const row = await commit.run(() => claimNextTx(lease, cap), 'visible');
      if (row) announce(row.id);
      return row;
    },
    claim: (id, lease, cap) => announcing(id, commit.run(() => claimTx(id, lease, cap), 'visible')),
    renewLeases: (lease, ids) =>
      commit.run(() => {
        const until = new Date(Date.now() + lease.ms).toISOString();
        return ids.filter((id) => renew.run({ id, owner: lease.owner, until }).changes === 1);
      }, 'visible'),
    recoverAbandoned: (message, self) => failRunning(() => abandoned.all({ now: new Date().toISOString(), self: self ?? null }) as RunningCredits[], message),
    releaseAll: (owner, message) => failRunning(() => heldBy.all(owner) as RunningCredits[], message),
    onQueued: () => undefined, // this process queues every run of its file itself (the serve lock)
    saveState: (id, current) =>
      announcing(
        id,
        commit.run((): ProgressOutcome => {
          const { state, spent, events: more } = current();
          const json = JSON.stringify(state);
          const saved = saveState.get(json, spent, id) as { cancel_requested_at: string | null } | undefined;
          if (!saved) return 'not_running';
          if (more?.length) events.append(id, more, new Date().toISOString());
          amend(id, (r) => ({ state: json, credits_spent: Math.min(spent, r.credits_reserved) }));
          return saved.cancel_requested_at === null ? 'saved' : 'cancel_requested';
        }, 'visible'),
      ),
    reserveMore: (id, amount) => commit.run(() => reserveMoreTx(id, amount), 'visible'),
    finish: (id, status, error, state, spent, now, more = []) => {
      const json = JSON.stringify(state);
      return announcing(id, commit.run(() => finishTx(id, status, error, json, spent, now, more), 'visible'));
    },
    park: (id, parking, now) => {
      const json = JSON.stringify(parking.state);
      return announcing(id, commit.run(() => parkTx(id, parking, json, now), 'visible'));
    },
    cancel: (id, user, now) => announcing(id, commit.run(() => cancelTx(id, user, now))),
    decide: (runId, callId, decision, note, user, now) => announcing(runId, commit.run(() => decideTx(runId, callId, decision, note, user, now))),
    expireApprovals: async (message, now) => {
      const ids = parkedPast.all(now) as string[];
      if (!ids.length) return 0;
      const expired = await commit.run(() => ids.filter((id) => expireTx(id, message, now)));
      expired.forEach(announce);
      return expired.length;
    },
    events: async (runId, seq, max) => events.after(runId, seq, max),
    lastEvent: async (runId) => events.last(runId),
    onEvents: (listener) => void eventListeners.push(listener),
    pruneFinished: (before, batch) => commit.run(() => pruneTx(before, batch)),
  };
}

/** An accept undone because the trigger's rate was spent, as its outcome; any other failure as it was. */
export function rateLimited(err: unknown): AcceptOutcome {
  if (err instanceof RateLimitReached) return { status: 'rate_limited' };
  throw err;
}

/** The last event of a run: how it ended. */
function finalEvent(status: RunStatus, error: string | null): RunEventInput {
  return { type: FINAL_EVENT, data: { status, error } };
}

/** The error of a run whose held tool calls were not decided in time. */
export const APPROVAL_EXPIRED = 'approval expired: the held tool calls were not approved or rejected in time';

/**
 * The least string above every string that starts with `prefix`, or null when there is none (an
 * empty prefix). SQLite compares text as UTF-8 bytes, which orders as code points do, so this is the
 * prefix with its last code point raised by one (past the surrogates, which are not code points of
 * text); a last code point that cannot be raised is dropped and the one before it raised.
 * (`prefix + '\uffff'` is no such bound: every character outside the BMP sorts above U+FFFF.)
 */
export function prefixUpperBound(prefix: string): string | null {
  const points = [...prefix].map((c) => c.codePointAt(0) as number);
  while (points.length) {
    const last = points.pop() as number;
    if (last < 0x10ffff) {
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return String.fromCodePoint(...points, next);
    }
  }
  return null;
}

/**
 * A kv write that keeps a workspace within its number of keys: a new key is inserted only while the
 * workspace has fewer than @limit; an existing one is always updated. (PostgreSQL's adapter numbers
 * the parameters; under READ COMMITTED, writes of new keys in the same instant may pass the limit by
 * as many as there are.)
 */
export const KV_SET_WITHIN_LIMIT = `INSERT INTO kv_entries (workspace_id, key, value, updated_at)
  SELECT @ws, @key, @value, @now
  WHERE (SELECT COUNT(*) FROM kv_entries WHERE workspace_id = @ws) < @limit
     OR EXISTS (SELECT 1 FROM kv_entries WHERE workspace_id = @ws AND key = @key)
  ON CONFLICT (workspace_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;

export interface KvRepository {
  get(workspaceId: string, key: string): Promise<unknown | undefined>;
  list(workspaceId: string, prefix: string, limit: number): Promise<string[]>;
  /**
   * Stores `value` under `key`; false, storing nothing, when the key is new and the workspace holds
   * `maxKeys` keys already (checked in the write itself).
   */
  set(workspaceId: string, key: string, value: unknown, maxKeys?: number): Promise<boolean>;
  delete(workspaceId: string, key: string): Promise<boolean>;
}

export function kvRepository(db: Db, commit: GroupCommit): KvRepository {
  const get = db.prepare('SELECT value FROM kv_entries WHERE workspace_id = ? AND key = ?').pluck();
  // Prefix match by range, so `%` and `_` in a prefix are plain characters.
  const listRange = db.prepare('SELECT key FROM kv_entries WHERE workspace_id = ? AND key >= ? AND key < ? ORDER BY key LIMIT ?').pluck();
  const listFrom = db.prepare('SELECT key FROM kv_entries WHERE workspace_id = ? AND key >= ? ORDER BY key LIMIT ?').pluck();
  const set = db.prepare(KV_SET_WITHIN_LIMIT);
  const del = db.prepare('DELETE FROM kv_entries WHERE workspace_id = ? AND key = ?');
  return {
    get: async (ws, key) => {
      const value = get.get(ws, key) as string | undefined;
      return value === undefined ? undefined : JSON.parse(value);
    },
    list: async (ws, prefix, limit) => {
      const upper = prefixUpperBound(prefix);
      return (upper === null ? listFrom.all(ws, prefix, limit) : listRange.all(ws, prefix, upper, limit)) as string[];
    },
    // Only the run workers' tools write here: acknowledged once committed, like the runs' progress.
    set: (ws, key, value, maxKeys = Number.MAX_SAFE_INTEGER) => {
      const json = JSON.stringify(value);
      return commit.run(() => set.run({ ws, key, value: json, now: new Date().toISOString(), limit: maxKeys }).changes === 1, 'visible');
    },
    delete: (ws, key) => commit.run(() => del.run(ws, key).changes > 0, 'visible'),
  };
}
