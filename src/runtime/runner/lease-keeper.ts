// A claim on a run is a lease, renewed while the run executes here. Runs no live worker holds
// (their lease passed: the process died; with SQLite, at start, any owner's) are finished as
// failed, with their unspent credits returned — at start and by the queue poll, so a replica's runs
// are ended by another within a lease and a poll of its death. A run is never executed twice: one
// that another process took over is stopped here (its renewal fails, and its writes are refused).
// At shutdown, runs still executing after the grace period are handed back the same way at once.
import crypto from 'node:crypto';
import os from 'node:os';
import type { Logger } from '../../log';
import type { Lease, RunQueue } from '../../store/port';
import type { ExecutingRuns } from './executing-runs';

/** The error of a run whose worker stopped (its process died, or lost its lease) before it ended. */
export const INTERRUPTED = 'interrupted: the service stopped while this run was running; start a new test run';
/** The error of a run still executing when its process shut down after the grace period. */
export const SHUT_DOWN = 'interrupted: the service shut down before this run finished; start a new test run';

/** How long a claim lasts unless renewed, by default; it is renewed every third of it. */
export const DEFAULT_LEASE_MS = 30_000;

/** A lease in this runner's name: unique per process start. */
export function newLease(ms = DEFAULT_LEASE_MS): Lease {
  return { owner: `${os.hostname()}/${process.pid}/${crypto.randomUUID().slice(0, 8)}`, ms };
}

export interface LeaseKeeperOptions {
  runs: Pick<RunQueue, 'recoverAbandoned' | 'renewLeases' | 'releaseAll'>;
  lease: Lease;
  executing: ExecutingRuns;
  logger: Logger;
}

export interface LeaseKeeper {
  /** Fails the runs no live worker holds (see recoverAbandoned; `starting`: this runner's first look, which takes any owner's with SQLite). */
  recover(starting?: boolean): Promise<void>;
  /** Renews the leases of the runs executing here; one that another process took over is stopped. */
  renew(): Promise<void>;
  /** Renews every third of the lease (at most every 100 ms) until `stopRenewing`. */
  startRenewing(): void;
  stopRenewing(): void;
  /**
   * Hands back the runs still executing here (at shutdown): ended as failed with their credits
   * returned — first, so that a worker stopping one cannot record it as cancelled — and then their
   * workers are asked to stop at their next step (their writes refused).
   */
  handBack(): Promise<void>;
}

export function createLeaseKeeper(opts: LeaseKeeperOptions): LeaseKeeper {
  const { runs, lease, executing, logger } = opts;
  let renewer: NodeJS.Timeout | null = null;

  async function renew(): Promise<void> {
    const ids = executing.ids();
    if (!ids.length) return;
    const held = new Set(await runs.renewLeases(lease, ids));
    for (const id of ids) {
      if (held.has(id)) continue;
      logger.warn({ runId: id }, 'lost the lease of a run: it is no longer executed here');
      executing.stop(id);
    }
  }

  return {
    async recover(starting = false) {
      const ended = await runs.recoverAbandoned(INTERRUPTED, starting ? lease.owner : undefined);
      if (ended) logger.warn({ runs: ended }, 'finished runs whose worker stopped as failed');
    },
    renew,
    startRenewing() {
      renewer = setInterval(
        () => renew().catch((err: unknown) => logger.error({ err }, 'could not renew run leases')),
        Math.max(100, Math.floor(lease.ms / 3)),
      );
      renewer.unref();
    },
    stopRenewing() {
      if (renewer) clearInterval(renewer);
    },
    async handBack() {
      if (!executing.size) return;
      const released = await runs.releaseAll(lease.owner, SHUT_DOWN);
      if (released) logger.warn({ runs: released }, 'finished runs still executing at shutdown as failed');
      executing.stopAll();
    },
  };
}
