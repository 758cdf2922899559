// The workers' side of the PostgreSQL queue, for any number of replicas. A claim names its worker
// and lasts lease.ms by the database's clock unless renewed; a run whose lease passed is failed by
// any replica (recoverAbandoned), never run twice.
import type { RunQueue, RunRow } from '../../port';
import { finalEvent, STARTED_EVENT } from '../../shared/runs';
import { numbered, RUN_COLUMNS } from '../../shared/statements';
import { appendedEvents, DB_NOW, withEventsAppended } from '../run-events';
import { credit, writeWithEvents, type PgRunContext, type Tx } from './context';

/** A RunRow's columns (lease_expires_at would come back as a Date). */
const runColumns = (t: string) => RUN_COLUMNS.map((c) => `${t}.${c}`).join(', ');

/**
 * A lease's end, `ms` (a parameter) from now by the database's clock: clock_timestamp(), the time
 * of the statement, not now(), its transaction's start, so that a claim never starts shorter. The
 * checks compare with now(), which is earlier still: a lease is taken over late rather than early.
 */
export const leaseEnd = (ms: string) => `clock_timestamp() + ${ms}::float8 * interval '1 millisecond'`;

/** A claim's writes: running, under @owner's lease for @ms, started now (each claim: a resumed run's start is its last). */
const CLAIMED = `status = 'running', started_at = ${DB_NOW}, lease_owner = @owner, lease_expires_at = ${leaseEnd('@ms')}`;

/** Running runs no live worker holds: their lease has passed (by the database's clock). */
const ABANDONED = `status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < now())`;

/** A running run to fail, locked, with what it reserved and did not spend. */
interface Abandoned {
  id: string;
  workspace_id: string;
  unspent: number;
}

// The per-workspace cap is a fairness bound, not an exact limit, across connections: a claim
// counts the workspace's running runs in its statement's snapshot, so k claims of one workspace
// committing at the same moment (on any replicas) can each see cap − 1 running and together leave
// up to cap + k − 1. Making it exact would serialise every claim of a workspace (a lock on its
// row), which SKIP LOCKED is here to avoid; later claims see the excess and wait for it to drain.
//
// A claim is one statement, committed on its own and acknowledged once visible (db.visible): the
// run's update and its `run.started` event (withEventsAppended).

/**
 * The oldest claimable run, locked; SKIP LOCKED passes over runs another claimer holds (any
 * replica), so concurrent claimers take different runs and never wait for each other. A run
 * claimed and committed since this statement's snapshot is re-checked on locking (status no
 * longer queued) and passed over too.
 */
const claimNext = numbered(
  withEventsAppended(
    `UPDATE runs SET ${CLAIMED} FROM candidate WHERE runs.id = candidate.id AND runs.status = 'queued'
     RETURNING ${runColumns('runs')}, runs.started_at AS at`,
    {
      // A CTE, so that it is evaluated once: as a subquery of the UPDATE, the planner may scan it again
      // for each row, and each scan locks and returns another run.
      before: `candidate AS (
         SELECT id FROM runs WHERE status = 'queued' AND workspace_id NOT IN
           (SELECT workspace_id FROM runs WHERE status = 'running' GROUP BY workspace_id HAVING COUNT(*) >= @cap)
         ORDER BY accepted_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)`,
    },
  ),
);

/** The claim of run @id: conditional on its status and on its workspace's cap (see above). */
export const CLAIM_IF_FAIR = `UPDATE runs SET ${CLAIMED} WHERE id = @id AND status = 'queued'
  AND (SELECT COUNT(*) FROM runs AS r WHERE r.status = 'running' AND r.workspace_id = runs.workspace_id) < @cap`;

/** The claim of a run handed over in memory, with its run.started event. */
const claimById = numbered(withEventsAppended(`${CLAIM_IF_FAIR} RETURNING id, started_at AS at`));

/** What a claim's statement is given besides its own parameters: its run.started event. */
const started = (ctx: PgRunContext) => appendedEvents([STARTED_EVENT], ctx.events.limit);

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
      `UPDATE runs SET status = 'failed', error = $2, finished_at = ${DB_NOW}, credits_reserved = credits_spent, lease_owner = NULL, lease_expires_at = NULL
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

export function pgRunQueue(ctx: PgRunContext): RunQueue {
  const { db, write } = ctx;
  return {
    claimNext: async (lease, cap) => {
      const row = await writeWithEvents<RunRow & { at: string; added: number }>(
        ctx,
        claimNext.text,
        claimNext.values({ owner: lease.owner, ms: lease.ms, cap, ...started(ctx) }),
      );
      if (!row) return null;
      const { at: _at, added: _added, ...run } = row;
      return run;
    },
    claim: async (id, lease, cap) =>
      (await writeWithEvents(ctx, claimById.text, claimById.values({ owner: lease.owner, ms: lease.ms, id, cap, ...started(ctx) }))) !== undefined,
    renewLeases: async (lease, ids) => {
      if (!ids.length) return [];
      const rows = await db.visible.rows<{ id: string }>(
        `UPDATE runs SET lease_expires_at = ${leaseEnd('$2')} WHERE id = ANY($3::text[]) AND lease_owner = $1 AND status = 'running' RETURNING id`,
        [lease.owner, lease.ms, ids],
      );
      return rows.map((r) => r.id);
    },
    // `self` concerns SQLite only (see the port): here a lease is held by whoever keeps renewing it.
    // Asked every second by every replica and almost always with nothing to do: a read says so
    // without a transaction. SKIP LOCKED: a run another replica is recovering, or whose worker is
    // writing it right now, is left to them (the next pass sees it again if it is still abandoned).
    recoverAbandoned: async (message) => {
      if (!(await db.row(`SELECT 1 FROM runs WHERE ${ABANDONED} LIMIT 1`))) return 0;
      return write(
        async (tx) =>
          failLocked(
            tx,
            await tx.rows<Abandoned>(
              `SELECT id, workspace_id, credits_reserved - credits_spent AS unspent FROM runs WHERE ${ABANDONED} ORDER BY id FOR UPDATE SKIP LOCKED`,
            ),
            message,
          ),
        'visible',
      );
    },
    // Not SKIP LOCKED: a run whose worker is writing it is waited for, then failed if still held.
    releaseAll: (owner, message) =>
      write(
        async (tx) =>
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
    onQueued: (listener) => ctx.onQueued(listener),
  };
}
