// A queued run's claim by a worker under its lease, inside the caller's transaction: by the queue's
// claims (queue.ts) and by an acceptance that claims its run for the accepting worker (acceptance.ts).
import type { Lease } from '../../port';
import { STARTED_EVENT } from '../../shared/runs';
import type { RunContext } from './context';

const CLAIM = `UPDATE runs SET status = 'running', started_at = @now, lease_owner = @owner, lease_expires_at = @until WHERE id = @id AND status = 'queued'`;

/** The lease columns of a claim made now. */
const leaseOf = (lease: Lease, now: string) => ({ owner: lease.owner, until: new Date(Date.parse(now) + lease.ms).toISOString() });

export interface SqliteClaims {
  /** Claims queued run `id`, the oldest claimable one (chosen in the same transaction). */
  claimChosen(id: string, lease: Lease): void;
  /** Claims run `id` if it is still queued and its workspace has fewer than `cap` running; false otherwise. */
  claimIfFair(id: string, lease: Lease, cap: number): boolean;
}

export function sqliteClaims(ctx: RunContext): SqliteClaims {
  const { db, events, recent } = ctx;
  const markRunning = db.prepare(CLAIM);
  const markRunningIfFair = db.prepare(
    `${CLAIM} AND (SELECT COUNT(*) FROM runs AS r WHERE r.status = 'running' AND r.workspace_id = runs.workspace_id) < @cap`,
  );

  const started = (id: string, now: string) => {
    events.append(id, [STARTED_EVENT], now);
    recent.amend(id, () => ({ status: 'running', started_at: now }));
  };

  return {
    claimChosen: (id, lease) => {
      const now = new Date().toISOString();
      markRunning.run({ id, now, ...leaseOf(lease, now) });
      started(id, now);
    },
    claimIfFair: (id, lease, cap) => {
      const now = new Date().toISOString();
      if (markRunningIfFair.run({ id, now, cap, ...leaseOf(lease, now) }).changes !== 1) return false;
      started(id, now);
      return true;
    },
  };
}
