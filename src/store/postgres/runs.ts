// Runs and credits in PostgreSQL: the behaviour of the SQLite repository (store/runs.ts) for any
// number of replicas writing the same rows under READ COMMITTED. Nothing is kept in this process:
// every read asks the database. Every write is one transaction whose guarantees are conditional
// statements with their affected-row counts checked; a write that must read a run before changing
// it (its reservation, its status) reads it FOR UPDATE, so that what it read stays true until it
// commits. Locks are taken in one order, a run's row before its workspace's, so writes of one run
// and one workspace do not deadlock each other (and a deadlock there is run again: database.ts).
//
// The queue is leased: a claim names its worker and lasts lease.ms by the database's clock unless
// renewed; a run whose lease passed is failed by any replica (recoverAbandoned), never run twice.
import {
  APPROVAL_EXPIRED,
  COUNT_DELIVERY_SQL,
  RateLimitReached,
  rateLimited,
  type AcceptOutcome,
  type ApprovalRow,
  type CancelOutcome,
  type DecideOutcome,
  type Lease,
  type NewRun,
  type Parking,
  type ProgressOutcome,
  type RunEnd,
  type RunRepository,
  type RunRow,
  type RunStatus,
} from '../runs';
import { FINAL_EVENT, type RunEventInput } from '../run-events';
import type { Ack } from '../group-commit';
import type { PgDatabase, Sql } from './database';
import type { Notifications } from './notifications';
import { DB_NOW, RUN_EVENTS_CHANNEL, pgRunEvents } from './run-events';
import { pgRunLists } from './run-lists';
import { recordFired, takeFire } from './schedule-writes';
import { bumpAgentStatus } from './trigger-status';

/** COUNT_DELIVERY_SQL with PostgreSQL's placeholders: $1 trigger, $2 window, $3 limit. */
const COUNT_DELIVERY_PG = COUNT_DELIVERY_SQL.replace('@id', '$1').replace('@window', '$2').replace('@limit', '$3');

/** The channel on which a write that queued a run says so (its payload: the writer's instance id). */
export const RUNS_QUEUED_CHANNEL = 'build_runs_queued';

/** A RunRow's columns, explicitly (never the lease columns: lease_expires_at would come back as a Date). */
const runColumns = (t: string) =>
  ['id', 'kind', 'workspace_id', 'started_by', 'target_id', 'target_version', 'status', 'source', 'trigger_id', 'request', 'snapshot', 'step_agents', 'state']
    .concat(['credits_reserved', 'credits_spent', 'error', 'accepted_at', 'started_at', 'finished_at', 'cancel_requested_at', 'cancelled_by', 'approval_expires_at'])
    .map((c) => `${t}.${c}`)
    .join(', ');

/** What `find` returns: the projection's row, without the documents (see RunRepository.find). */
const PROJECTION_SQL = `SELECT id, kind, workspace_id, started_by, target_id, target_version, status, source, trigger_id, request,
    CASE WHEN agent_slug IS NOT NULL THEN json_build_object('slug', agent_slug, 'name', agent_name)::text END AS snapshot,
    NULL::text AS step_agents, state, credits_reserved, credits_spent, error, accepted_at, started_at, finished_at,
    cancel_requested_at, cancelled_by, approval_expires_at
  FROM runs WHERE id = $1`;

/**
 * A lease's end, `ms` (a parameter) from now by the database's clock: clock_timestamp(), the time
 * of the statement, not now(), its transaction's start, so that a claim never starts shorter. The
 * checks compare with now(), which is earlier still: a lease is taken over late rather than early.
 */
const leaseEnd = (ms: string) => `clock_timestamp() + ${ms}::float8 * interval '1 millisecond'`;

/** A claim's writes: running, under the lease, started now (each claim, as SQLite's does: a resumed run's start is its last). */
const CLAIMED = `status = 'running', started_at = ${DB_NOW}, lease_owner = $1, lease_expires_at = ${leaseEnd('$2')}`;

/** Running runs no live worker holds: their lease has passed (by the database's clock). */
const ABANDONED = `status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < now())`;

/** Every write that ends or parks a run lets go of its lease. */
const UNLEASED = 'lease_owner = NULL, lease_expires_at = NULL';

/** What the writes that change a run's credits or status read of it first, FOR UPDATE. */
type RunControl = Pick<RunRow, 'status' | 'workspace_id' | 'credits_reserved' | 'credits_spent' | 'cancel_requested_at'>;

/** A run's row, locked until the transaction ends (the latest committed version, READ COMMITTED). */
const lockRun = (sql: Sql, id: string) =>
  sql.row<RunControl>(
    'SELECT status, workspace_id, credits_reserved, credits_spent, cancel_requested_at FROM runs WHERE id = $1 FOR UPDATE',
    [id],
  );

const credit = async (sql: Sql, workspace: string, amount: number) => {
  if (amount > 0) await sql.count('UPDATE workspaces SET credits = credits + $1 WHERE id = $2', [amount, workspace]);
};

/** The one debit of a balance: conditional, so it never goes below zero, whatever the concurrency. */
const debit = async (sql: Sql, workspace: string, amount: number) =>
  (await sql.count('UPDATE workspaces SET credits = credits - $1 WHERE id = $2 AND credits >= $1', [amount, workspace])) === 1;

/** The last event of a run: how it ended. */
const finalEvent = (status: RunStatus, error: string | null): RunEventInput => ({ type: FINAL_EVENT, data: { status, error } });

/** A running run to fail, locked, with what it reserved and did not spend. */
interface Abandoned {
  id: string;
  workspace_id: string;
  unspent: number;
}

/** A write's statements, and the append of a run's events (after the statement that locked its row: see run-events.ts). */
interface Tx extends Sql {
  append(runId: string, events: readonly RunEventInput[], now: string | null): Promise<void>;
}

export function pgRunRepository(db: PgDatabase, notifications: Notifications, eventsLimit?: number): RunRepository {
  const events = pgRunEvents(eventsLimit);
  const list = pgRunLists(db);
  const self = notifications.instanceId;
  const eventListeners: ((runId: string) => void)[] = [];
  const queuedListeners: (() => void)[] = [];
  const announce = (runId: string) => {
    for (const listener of eventListeners) listener(runId);
  };

  // Other replicas' event writes: `<instance>:<run id>`; ours were announced when they committed.
  // After a reconnection (null) nothing is called: no run is named, and the event feed reads every
  // run with open streams each second anyway (FEED_POLL_MS), which covers what was missed.
  notifications.on(RUN_EVENTS_CHANNEL, (payload) => {
    if (payload === null) return;
    const colon = payload.indexOf(':');
    if (colon < 0 || payload.slice(0, colon) === self) return;
    announce(payload.slice(colon + 1));
  });
  // Runs queued by other replicas (ours are handed to this process's runner by its caller), and
  // after a reconnection: a run may have been queued meanwhile.
  notifications.on(RUNS_QUEUED_CHANNEL, (payload) => {
    if (payload === self) return;
    for (const listener of queuedListeners) listener();
  });
  /** Tells the other replicas, when the transaction commits, that a run is queued. */
  const notifyQueued = (sql: Sql) => sql.rows('SELECT pg_notify($1, $2)', [RUNS_QUEUED_CHANNEL, self]);

  /**
   * Runs `work` in one transaction; once it committed, this process's listeners hear of the runs it
   * added events to. The workers' own writes are acknowledged once `visible` (see PgDatabase.transaction).
   */
  const write = async <T>(work: (tx: Tx) => Promise<T>, ack: Ack = 'durable'): Promise<T> => {
    let touched = new Set<string>();
    const value = await db.transaction((sql) => {
      touched = new Set(); // a transaction run again (a deadlock) starts from nothing
      return work({
        ...sql,
        append: async (runId, more, now) => {
          if ((await events.append(sql, runId, more, now, `${self}:${runId}`)) > 0) touched.add(runId);
        },
      });
    }, { ack });
    for (const runId of touched) announce(runId);
    return value;
  };

  // A worker's writes of one run land in the order it made them: it saves progress without waiting
  // and may end the run meanwhile; SQLite's group commit kept that order, a pool of connections does
  // not (the end could commit first, and the save's events would be dropped as 'not_running'). Only
  // writes in flight are held here, never rows.
  const lanes = new Map<string, Promise<unknown>>();
  const inOrder = <T>(runId: string, next: () => Promise<T>): Promise<T> => {
    const mine = (lanes.get(runId) ?? Promise.resolve()).then(next, next);
    const tail = mine.catch(() => undefined);
    lanes.set(runId, tail);
    void tail.then(() => lanes.get(runId) === tail && lanes.delete(runId));
    return mine;
  };

  const acceptTx = async (tx: Tx, run: NewRun, refusal: (balance: number) => string): Promise<AcceptOutcome> => {
    // The acceptance time by the database's clock, as the claims' (the queue's order is by it).
    const { now } = (await tx.row<{ now: string }>(
      `WITH clock AS (SELECT ${DB_NOW} AS now),
        ensured AS (INSERT INTO workspaces (id, credits, created_at) SELECT $1::text, $2::bigint, now FROM clock ON CONFLICT (id) DO NOTHING)
       SELECT now FROM clock`,
      [run.workspaceId, run.initialCredits],
    )) as { now: string };
    if (run.delivery) {
      // The delivery's row, claimed before anything is spent: new, or taking over one older than the
      // repeat window. Of concurrent deliveries of one key (any replica), the later inserts wait for
      // the first to commit, then find its row too recent: 0 rows, a repeat that writes nothing.
      const claimed = await tx.count(
        `INSERT INTO webhook_deliveries (trigger_id, delivery_key, run_id, http_status, received_at) VALUES ($1, $2, $3, 0, $4)
         ON CONFLICT (trigger_id, delivery_key) DO UPDATE SET run_id = excluded.run_id, http_status = excluded.http_status, received_at = excluded.received_at
         WHERE webhook_deliveries.received_at < $5`,
        [run.triggerId, run.delivery.key, run.id, now, run.delivery.since],
      );
      if (claimed !== 1) {
        // The first one committed (its reply with it), and this statement sees it.
        const prior = await tx.row<{ runId: string; httpStatus: number }>(
          'SELECT run_id AS "runId", http_status AS "httpStatus" FROM webhook_deliveries WHERE trigger_id = $1 AND delivery_key = $2',
          [run.triggerId, run.delivery.key],
        );
        return { status: 'repeated', ...(prior as { runId: string; httpStatus: number }) };
      }
    }
    // Counted only once the delivery is known to be new. The count is one conditional upsert: a
    // second upsert of the row (any replica) waits for the first to commit, then judges the count it
    // left. Past the limit, the whole write is undone, the delivery's row with it.
    if (run.rate && (await tx.count(COUNT_DELIVERY_PG, [run.triggerId, run.rate.window, run.rate.limit])) !== 1) throw new RateLimitReached();
    if (run.fire && !(await takeFire(tx, run.fire, now))) return { status: 'raced' };
    const left = (await debit(tx, run.workspaceId, run.minimumCost))
      ? null
      : ((await tx.row<{ credits: number }>('SELECT credits FROM workspaces WHERE id = $1', [run.workspaceId])) as { credits: number }).credits;
    const error = left === null ? null : refusal(left);
    await tx.count(
      `INSERT INTO runs (id, kind, workspace_id, started_by, target_id, target_version, status, source, trigger_id, request, snapshot, step_agents, state,
         credits_reserved, error, accepted_at, finished_at, agent_slug, agent_name)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
      [
        run.id,
        run.kind,
        run.workspaceId,
        run.startedBy,
        run.targetId,
        run.targetVersion,
        left === null ? 'queued' : 'refused',
        run.source,
        run.triggerId ?? null,
        JSON.stringify(run.request),
        run.snapshotJson,
        run.stepAgentsJson ?? null,
        JSON.stringify(run.state),
        left === null ? run.minimumCost : 0,
        error,
        now,
        left === null ? null : now,
        run.agent?.slug ?? null,
        run.agent?.name ?? null,
      ],
    );
    // The row is new and not yet visible to anyone: its first events need no lock.
    await tx.append(run.id, [left === null ? { type: 'run.queued', data: { status: 'queued' } } : finalEvent('refused', error)], now);
    if (run.delivery) {
      await tx.count('UPDATE webhook_deliveries SET http_status = $1 WHERE trigger_id = $2 AND delivery_key = $3', [
        left === null ? 202 : 409,
        run.triggerId,
        run.delivery.key,
      ]);
    }
    if (run.fire) await recordFired(tx, run.fire, left === null ? 'fired' : 'refused', run.id, error, now);
    if (run.triggerId) await bumpAgentStatus(tx, run.targetId); // its trigger's last_fired_at
    if (left !== null) return { status: 'refused', balance: left };
    await notifyQueued(tx);
    return { status: 'queued' };
  };

  // The per-workspace cap is a fairness bound, not an exact limit, across connections: a claim
  // counts the workspace's running runs in its statement's snapshot, so k claims of one workspace
  // committing at the same moment (on any replicas) can each see cap − 1 running and together leave
  // up to cap + k − 1. Making it exact would serialise every claim of a workspace (a lock on its
  // row), which SKIP LOCKED is here to avoid; later claims see the excess and wait for it to drain.
  const claimNextTx = async (tx: Tx, lease: Lease, cap: number): Promise<RunRow | null> => {
    // The oldest claimable run, locked; SKIP LOCKED passes over runs another claimer holds (any
    // replica), so concurrent claimers take different runs and never wait for each other. A run
    // claimed and committed since this statement's snapshot is re-checked on locking (status no
    // longer queued) and passed over too.
    const row = await tx.row<RunRow>(
      `WITH candidate AS (
         SELECT id FROM runs WHERE status = 'queued' AND workspace_id NOT IN
           (SELECT workspace_id FROM runs WHERE status = 'running' GROUP BY workspace_id HAVING COUNT(*) >= $3)
         ORDER BY accepted_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
       UPDATE runs SET ${CLAIMED} FROM candidate WHERE runs.id = candidate.id AND runs.status = 'queued'
       RETURNING ${runColumns('runs')}`,
      [lease.owner, lease.ms, cap],
    );
    if (!row) return null;
    await tx.append(row.id, [{ type: 'run.started', data: { status: 'running' } }], row.started_at);
    return row;
  };

  /** The claim of a run handed over in memory: conditional on its status and on its workspace's cap (see above). */
  const claimTx = async (tx: Tx, id: string, lease: Lease, cap: number): Promise<boolean> => {
    const row = await tx.row<{ started_at: string }>(
      `UPDATE runs SET ${CLAIMED} WHERE id = $3 AND status = 'queued'
         AND (SELECT COUNT(*) FROM runs AS r WHERE r.status = 'running' AND r.workspace_id = runs.workspace_id) < $4
       RETURNING started_at`,
      [lease.owner, lease.ms, id, cap],
    );
    if (!row) return false;
    await tx.append(id, [{ type: 'run.started', data: { status: 'running' } }], row.started_at);
    return true;
  };

  /**
   * Fails these locked running runs with `message`: each by a write conditional on its status,
   * its unspent reservation back to its workspace (the workspaces in one order, so two replicas
   * recovering runs of the same workspaces do not deadlock), its final event after. How many.
   */
  const failLocked = async (tx: Tx, runs: Abandoned[], message: string): Promise<number> => {
    const refunds = new Map<string, number>();
    const ended: { id: string; finished_at: string }[] = [];
    for (const run of runs) {
      const row = await tx.row<{ finished_at: string }>(
        `UPDATE runs SET status = 'failed', error = $2, finished_at = ${DB_NOW}, credits_reserved = credits_spent, ${UNLEASED}
         WHERE id = $1 AND status = 'running' RETURNING finished_at`,
        [run.id, message],
      );
      if (!row) continue;
      ended.push({ id: run.id, finished_at: row.finished_at });
      refunds.set(run.workspace_id, (refunds.get(run.workspace_id) ?? 0) + run.unspent);
    }
    for (const workspace of [...refunds.keys()].sort()) await credit(tx, workspace, refunds.get(workspace) as number);
    for (const run of ended) await tx.append(run.id, [finalEvent('failed', message)], run.finished_at);
    return ended.length;
  };

  const reserveMoreTx = async (tx: Sql, id: string, amount: number): Promise<boolean> => {
    const run = await tx.row<{ workspace_id: string }>(
      `UPDATE runs SET credits_reserved = credits_reserved + $2 WHERE id = $1 AND status = 'running' RETURNING workspace_id`,
      [id, amount],
    );
    if (!run) return false; // not running
    if (await debit(tx, run.workspace_id, amount)) return true;
    // The balance cannot cover it: the reservation goes back as it was.
    await tx.count('UPDATE runs SET credits_reserved = credits_reserved - $2 WHERE id = $1', [id, amount]);
    return false;
  };

  const finishTx = async (tx: Tx, id: string, status: RunEnd, error: string | null, state: string, spent: number, now: string, more: RunEventInput[]) => {
    const run = await lockRun(tx, id);
    if (!run) return false;
    const charged = Math.min(spent, run.credits_reserved);
    const changed = await tx.count(
      `UPDATE runs SET status = $2, error = $3, state = $4, finished_at = $5, credits_spent = $6, credits_reserved = $6, ${UNLEASED},
         -- a cancel that came too late (the run ended first) leaves no trace: one outcome
         cancel_requested_at = CASE WHEN $2 = 'cancelled' THEN cancel_requested_at END,
         cancelled_by = CASE WHEN $2 = 'cancelled' THEN cancelled_by END
       WHERE id = $1 AND status = 'running'`,
      [id, status, error, state, now, charged],
    );
    if (changed !== 1) return false; // not running: another path ended it, and its end stands
    await credit(tx, run.workspace_id, run.credits_reserved - charged);
    await tx.append(id, [...more, finalEvent(status, error)], now);
    return true;
  };

  const parkTx = async (tx: Tx, id: string, parking: Parking, state: string, now: string): Promise<'parked' | ProgressOutcome> => {
    const run = await lockRun(tx, id);
    if (!run) return 'not_running';
    const charged = Math.min(parking.spent, run.credits_reserved);
    const changed = await tx.count(
      `UPDATE runs SET status = 'awaiting_approval', state = $2, credits_spent = $3, credits_reserved = $3, approval_expires_at = $4, ${UNLEASED}
       WHERE id = $1 AND status = 'running' AND cancel_requested_at IS NULL`,
      [id, state, charged, parking.expiresAt],
    );
    if (changed !== 1) return run.status === 'running' && run.cancel_requested_at !== null ? 'cancel_requested' : 'not_running';
    await credit(tx, run.workspace_id, run.credits_reserved - charged);
    for (const call of parking.calls) {
      await tx.count(
        `INSERT INTO run_approvals (run_id, call_id, tool, requested_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (run_id, call_id) DO UPDATE SET tool = excluded.tool, requested_at = excluded.requested_at,
           decision = NULL, note = NULL, decided_by = NULL, decided_at = NULL`,
        [id, call.id, call.tool, now],
      );
    }
    const waiting = { type: 'run.awaiting_approval', data: { status: 'awaiting_approval', calls: parking.calls, expires_at: parking.expiresAt } };
    await tx.append(id, [...parking.events, waiting], now);
    return 'parked';
  };

  const cancelTx = async (tx: Tx, id: string, user: string, now: string): Promise<CancelOutcome> => {
    // Locked first: a worker's end or a claim of the same run waits for this write, or this for it.
    const run = await lockRun(tx, id);
    if (!run) return { outcome: 'missing' };
    if (run.status === 'cancelled') return { outcome: 'cancelled' };
    if (run.status === 'running') {
      const asked = await tx.count(
        `UPDATE runs SET cancel_requested_at = $2, cancelled_by = $3 WHERE id = $1 AND status = 'running' AND cancel_requested_at IS NULL`,
        [id, now, user],
      );
      if (asked === 1) await tx.append(id, [{ type: 'run.cancel_requested', data: { cancelled_by: user } }], now);
      return { outcome: 'requested' };
    }
    if (run.status !== 'queued' && run.status !== 'awaiting_approval') return { outcome: 'finished', status: run.status };
    const changed = await tx.count(
      `UPDATE runs SET status = 'cancelled', finished_at = $2, cancel_requested_at = $2, cancelled_by = $3, credits_reserved = credits_spent, ${UNLEASED}
       WHERE id = $1 AND status = $4`,
      [id, now, user, run.status],
    );
    if (changed !== 1) return { outcome: 'finished', status: run.status };
    await credit(tx, run.workspace_id, run.credits_reserved - run.credits_spent);
    await tx.append(id, [{ ...finalEvent('cancelled', null), data: { status: 'cancelled', error: null, cancelled_by: user } }], now);
    return { outcome: 'cancelled' };
  };

  const expireTx = async (tx: Tx, id: string, message: string, now: string): Promise<boolean> => {
    const changed = await tx.count(
      `UPDATE runs SET status = 'failed', error = $2, finished_at = $3 WHERE id = $1 AND status = 'awaiting_approval' AND approval_expires_at <= $3`,
      [id, message, now],
    );
    if (changed !== 1) return false;
    await tx.append(id, [finalEvent('failed', message)], now);
    return true;
  };

  const decideTx = async (tx: Tx, runId: string, callId: string, decision: 'approve' | 'reject', note: string | null, user: string, now: string): Promise<DecideOutcome> => {
    // The run is locked before its calls are read: decisions of one run's calls made at once (on
    // any replica) then follow each other, and the last sees the others decided and resumes the
    // run. Without it, each would count the other's call still undecided and neither would resume.
    const run = await tx.row<Pick<RunRow, 'status' | 'state' | 'approval_expires_at'>>(
      'SELECT status, state, approval_expires_at FROM runs WHERE id = $1 FOR UPDATE',
      [runId],
    );
    const approval = await tx.row<ApprovalRow>('SELECT * FROM run_approvals WHERE run_id = $1 AND call_id = $2', [runId, callId]);
    if (!run || !approval) return { outcome: 'no_call' };
    if (approval.decision !== null) return { outcome: 'decided_before', approval };
    if (run.status !== 'awaiting_approval') return { outcome: 'not_waiting', status: run.status };
    if ((run.approval_expires_at as string) <= now) {
      await expireTx(tx, runId, APPROVAL_EXPIRED, now);
      return { outcome: 'not_waiting', status: 'failed' };
    }
    const decided = await tx.count(
      `UPDATE run_approvals SET decision = $3, note = $4, decided_by = $5, decided_at = $6 WHERE run_id = $1 AND call_id = $2 AND decision IS NULL`,
      [runId, callId, decision, note, user, now],
    );
    if (decided !== 1) {
      const first = await tx.row<ApprovalRow>('SELECT * FROM run_approvals WHERE run_id = $1 AND call_id = $2', [runId, callId]);
      return { outcome: 'decided_before', approval: first as ApprovalRow };
    }
    // The projection shows the decision at once; the worker that resumes the run reads it from the state.
    const state = JSON.parse(run.state) as { tool_calls?: { id: string; status: string; approval?: unknown }[] };
    for (const call of state.tool_calls ?? []) {
      if (call.id === callId && call.status === 'awaiting_approval') call.approval = { decision, note, decided_by: user, decided_at: now };
    }
    const json = JSON.stringify(state);
    const undecided = await tx.row<{ n: number }>('SELECT COUNT(*) AS n FROM run_approvals WHERE run_id = $1 AND decision IS NULL', [runId]);
    const last = undecided?.n === 0;
    const changed = await tx.count(
      last
        ? `UPDATE runs SET status = 'queued', state = $2, approval_expires_at = NULL WHERE id = $1 AND status = 'awaiting_approval'`
        : `UPDATE runs SET state = $2 WHERE id = $1 AND status = 'awaiting_approval'`,
      [runId, json],
    );
    if (changed !== 1) throw new Error(`run ${runId}: not awaiting approval under its lock`); // cannot happen: rolls back
    const decidedEvent = { type: 'approval.decided', data: { call_id: callId, decision, decided_by: user } };
    await tx.append(runId, last ? [decidedEvent, { type: 'run.queued', data: { status: 'queued' } }] : [decidedEvent], now);
    if (!last) return { outcome: 'decided' };
    await notifyQueued(tx);
    return { outcome: 'resumed' };
  };

  return {
    accept: (run, refusal) => write((tx) => acceptTx(tx, run, refusal)).catch(rateLimited),
    find: async (id) => (await db.row<RunRow>(PROJECTION_SQL, [id])) ?? null,
    claimNext: (lease, cap) => write((tx) => claimNextTx(tx, lease, cap), 'visible'),
    claim: (id, lease, cap) => write((tx) => claimTx(tx, id, lease, cap), 'visible'),
    renewLeases: async (lease, ids) => {
      if (!ids.length) return [];
      const rows = await write((tx) =>
        tx.rows<{ id: string }>(
          `UPDATE runs SET lease_expires_at = ${leaseEnd('$2')} WHERE id = ANY($3::text[]) AND lease_owner = $1 AND status = 'running' RETURNING id`,
          [lease.owner, lease.ms, ids],
        ),
        'visible',
      );
      return rows.map((r) => r.id);
    },
    // `self` is SQLite's (see the interface): here a lease is held by whoever keeps renewing it.
    // Asked every second by every replica and almost always with nothing to do: a read says so
    // without a transaction. SKIP LOCKED: a run another replica is recovering, or whose worker is
    // writing it right now, is left to them (the next pass sees it again if it is still abandoned).
    recoverAbandoned: async (message) => {
      if (!(await db.row(`SELECT 1 FROM runs WHERE ${ABANDONED} LIMIT 1`))) return 0;
      return write(
        async (tx) =>
          failLocked(tx, await tx.rows<Abandoned>(`SELECT id, workspace_id, credits_reserved - credits_spent AS unspent FROM runs WHERE ${ABANDONED} ORDER BY id FOR UPDATE SKIP LOCKED`), message),
        'visible',
      );
    },
    // Not SKIP LOCKED: a run whose worker is writing it is waited for, then failed if still held.
    releaseAll: (owner, message) =>
      write(async (tx) =>
        failLocked(
          tx,
          await tx.rows<Abandoned>(
            `SELECT id, workspace_id, credits_reserved - credits_spent AS unspent FROM runs
             WHERE status = 'running' AND lease_owner = $1 ORDER BY id FOR UPDATE`,
            [owner],
          ),
          message,
        ),
        'visible',
      ),
    onQueued: (listener) => void queuedListeners.push(listener),
    saveState: (id, current) =>
      inOrder(id, () => {
        // Taken once, outside the transaction: a transaction run again must not take (and lose) the events twice.
        const { state, spent, events: more } = current();
        const json = JSON.stringify(state);
        return write(async (tx): Promise<ProgressOutcome> => {
          const saved = await tx.row<{ cancel_requested_at: string | null }>(
            `UPDATE runs SET state = $2, credits_spent = LEAST($3::bigint, credits_reserved) WHERE id = $1 AND status = 'running' RETURNING cancel_requested_at`,
            [id, json, spent],
          );
          if (!saved) return 'not_running';
          if (more?.length) await tx.append(id, more, null);
          return saved.cancel_requested_at === null ? 'saved' : 'cancel_requested';
        }, 'visible');
      }),
    reserveMore: (id, amount) => inOrder(id, () => write((tx) => reserveMoreTx(tx, id, amount), 'visible')),
    finish: (id, status, error, state, spent, now, more = []) => {
      const json = JSON.stringify(state);
      return inOrder(id, () => write((tx) => finishTx(tx, id, status, error, json, spent, now, more), 'visible'));
    },
    park: (id, parking, now) => {
      const json = JSON.stringify(parking.state);
      return inOrder(id, () => write((tx) => parkTx(tx, id, parking, json, now), 'visible'));
    },
    cancel: (id, user, now) => write((tx) => cancelTx(tx, id, user, now)),
    decide: (runId, callId, decision, note, user, now) => write((tx) => decideTx(tx, runId, callId, decision, note, user, now)),
    expireApprovals: async (message, now) => {
      const due = await db.rows<{ id: string }>(
        `SELECT id FROM runs WHERE status = 'awaiting_approval' AND approval_expires_at <= $1 ORDER BY approval_expires_at, id LIMIT 100`,
        [now],
      );
      if (!due.length) return 0;
      return write(async (tx) => {
        let expired = 0;
        for (const { id } of due) if (await expireTx(tx, id, message, now)) expired++;
        return expired;
      }, 'visible');
    },
    events: (runId, seq, max) => events.after(db, runId, seq, max),
    lastEvent: (runId) => events.last(db, runId),
    onEvents: (listener) => void eventListeners.push(listener),
    pruneFinished: (before, batch) =>
      write(async (tx) => {
        // SKIP LOCKED: replicas pruning at once delete different runs.
        const gone = await tx.rows<{ id: string }>(
          `DELETE FROM runs WHERE id IN
             (SELECT id FROM runs WHERE finished_at IS NOT NULL AND finished_at < $1 ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED)
           RETURNING id`,
          [before, batch],
        );
        const ids = gone.map((r) => r.id);
        if (!ids.length) return 0;
        await events.remove(tx, ids);
        await tx.count('DELETE FROM run_approvals WHERE run_id = ANY($1::text[])', [ids]);
        return ids.length;
      }, 'visible'),
    list: async (query) => list(query), // a bad limit rejects, as SQLite's does
    lastStartedBy: async (triggerIds) => {
      const rows = await db.rows<{ trigger_id: string; at: string }>(
        `SELECT trigger_id, MAX(accepted_at) AS at FROM runs WHERE trigger_id = ANY($1::text[]) AND status != 'refused' GROUP BY trigger_id`,
        [triggerIds],
      );
      return new Map(rows.map((r) => [r.trigger_id, r.at]));
    },
  };
}
