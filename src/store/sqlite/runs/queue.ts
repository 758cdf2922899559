// The workers' side of the SQLite queue: claims under a lease, renewal, and the failure of runs no
// live worker holds (at start, after a crash, at shutdown).
import type { Lease, RunQueue, RunRow } from '../../port';
import { finalEvent } from '../../shared/runs';
import { RUN_COLUMNS } from '../../shared/statements';
import { sqliteClaims } from './claims';
import type { RunContext } from './context';

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

type RunningCredits = Pick<RunRow, 'id' | 'workspace_id' | 'credits_reserved' | 'credits_spent'>;

export function sqliteRunQueue(ctx: RunContext): RunQueue {
  const { db, commit, events, recent } = ctx;
  const byId = db.prepare(`SELECT ${RUN_COLUMNS.join(', ')} FROM runs WHERE id = ?`);
  const nextQueued = db.prepare(NEXT_QUEUED_SQL).pluck();
  const claims = sqliteClaims(ctx);
  const renew = db.prepare(`UPDATE runs SET lease_expires_at = @until WHERE id = @id AND status = 'running' AND lease_owner = @owner`);
  const abandoned = db.prepare(ABANDONED_SQL);
  const heldBy = db.prepare(`SELECT id, workspace_id, credits_reserved, credits_spent FROM runs WHERE status = 'running' AND lease_owner = ?`);
  const failOne = db.prepare(
    `UPDATE runs SET status = 'failed', error = @error, finished_at = @now, credits_reserved = credits_spent,
       lease_owner = NULL, lease_expires_at = NULL WHERE id = @id AND status = 'running'`,
  );

  const claimNextTx = (lease: Lease, cap: number): RunRow | null => {
    const id = nextQueued.get({ cap }) as string | undefined;
    if (!id) return null;
    claims.claimChosen(id, lease);
    return byId.get(id) as RunRow;
  };

  /** Fails these running runs with `message`, their unspent reservations returned; the ids it ended. */
  const failRunningTx = (rows: RunningCredits[], message: string): string[] => {
    const now = new Date().toISOString();
    const ended: string[] = [];
    for (const run of rows) {
      if (failOne.run({ id: run.id, error: message, now }).changes !== 1) continue;
      ended.push(run.id);
      ctx.credit(run.workspace_id, run.credits_reserved - run.credits_spent);
      events.append(run.id, [finalEvent('failed', message)], now);
      recent.amend(run.id, (r) => ({ status: 'failed', error: message, finished_at: now, credits_reserved: r.credits_spent }));
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
    ended.forEach(ctx.announce);
    return ended.length;
  };

  return {
    // The workers' writes are acknowledged once committed, not once on disk (see Ack in group-commit.ts).
    claimNext: async (lease, cap) => {
      const row = await commit.run(() => claimNextTx(lease, cap), 'visible');
      if (row) ctx.announce(row.id);
      return row;
    },
    // The claim of a run handed over in memory: conditional on its status and on its workspace's cap.
    claim: (id, lease, cap) =>
      ctx.announcing(
        id,
        commit.run(() => claims.claimIfFair(id, lease, cap), 'visible'),
      ),
    renewLeases: (lease, ids) =>
      commit.run(() => {
        const until = new Date(Date.now() + lease.ms).toISOString();
        return ids.filter((id) => renew.run({ id, owner: lease.owner, until }).changes === 1);
      }, 'visible'),
    recoverAbandoned: (message, self) => failRunning(() => abandoned.all({ now: new Date().toISOString(), self: self ?? null }) as RunningCredits[], message),
    releaseAll: (owner, message) => failRunning(() => heldBy.all(owner) as RunningCredits[], message),
    onQueued: () => undefined, // this process queues every run of its file itself (the serve lock)
  };
}
