// Up to `workers` workers, each claiming a queued run, executing it, and claiming the next until it
// finds none. A run handed over in memory is claimed by one conditional UPDATE; otherwise the
// oldest claimable run is claimed from the database's queue. The database's queue is the truth: a
// run is claimed by exactly one worker of any process, whatever was handed over where. A claim is
// refused for a run whose workspace already has `perWorkspace` runs executing: one workspace cannot
// take every worker.
import type { Logger } from '../../log';
import type { Lease, RunQueue } from '../../store/port';
import type { HandOffQueue, Look } from './hand-off-queue';
import { fromRow, type QueuedRun } from './queued-run';

export interface WorkerPoolOptions {
  runs: Pick<RunQueue, 'claim' | 'claimNext'>;
  queue: HandOffQueue;
  /** The lease every claim is made under. */
  lease: Lease;
  workers: number;
  /** Runs of one workspace executing at once, at most (the rest wait in the queue). */
  perWorkspace: number;
  /** Executes a claimed run to its end (never rejects for the run's own failure). */
  execute: (run: QueuedRun) => Promise<void>;
  logger: Logger;
}

export interface WorkerPool {
  /**
   * A run was queued: adds a worker unless all are busy (each queued run notifies once, so busy
   * periods fill up to `workers`). With the run, a worker takes it from memory; without, the
   * workers look in the database's queue.
   */
  notify(run?: QueuedRun): void;
  /** Whether a worker could be added. */
  hasRoom(): boolean;
  /** Stops claiming runs and waits (at most `graceMs`) for the workers to end. */
  drain(graceMs: number): Promise<void>;
  /** Resolves when no worker is working. */
  idle(): Promise<void>;
}

/** The workers working, and who waits for there to be none. */
class ActiveWorkers {
  private count = 0;
  private waiters: (() => void)[] = [];

  get value(): number {
    return this.count;
  }

  enter(): void {
    this.count++;
  }

  leave(): void {
    this.count--;
    if (this.count > 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Resolves when no worker is working. */
  none(): Promise<void> {
    return this.count === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}

export function createWorkerPool(opts: WorkerPoolOptions): WorkerPool {
  const { runs, queue, lease, logger } = opts;
  const cap = opts.perWorkspace;
  let executing = 0;
  const active = new ActiveWorkers();
  let stopping = false;
  const workers = new Set<Promise<void>>();

  /** Executes a claimed run; when it ends, runs left waiting by a workspace's cap may go. */
  async function ranOne(run: QueuedRun): Promise<void> {
    executing++;
    try {
      await opts.execute(run);
    } finally {
      executing--;
    }
    queue.runEnded();
  }

  /** Claims a run handed over in memory and executes it. */
  async function runHandedOver(run: QueuedRun): Promise<void> {
    // False when the database's queue gave it to another worker first, or its workspace is at its
    // cap: then it waits in the table, which the workers read again when a run ends.
    if (await runs.claim(run.id, lease, cap)) await ranOne(run);
    else queue.claimRefused();
  }

  /** Claims the oldest claimable run of the database's queue and executes it. */
  async function runFromTable(look: Look): Promise<void> {
    const row = await runs.claimNext(lease, cap).catch((err: unknown) => {
      queue.lookFailed(); // work() counts a run in the table again
      throw err;
    });
    if (!row) return queue.foundNone(look, executing);
    queue.found();
    await ranOne(fromRow(row));
  }

  async function work(): Promise<void> {
    active.enter();
    try {
      // The checks that end the loop take no await: a run handed over while a worker is leaving
      // finds it still counted active, so the worker must see that run before it leaves.
      while (!stopping) {
        const next = queue.take();
        if (next) {
          await runHandedOver(next);
          continue;
        }
        const look = queue.startLook();
        if (!look) break;
        await runFromTable(look);
      }
    } catch (err) {
      // Whatever stopped this worker (a claim whose group did not commit, say) may have left a run
      // queued in the table and no longer in memory: the next worker looks there.
      queue.lookInTable();
      logger.error({ err }, 'run worker stopped unexpectedly');
    } finally {
      active.leave();
    }
  }

  return {
    notify(run) {
      queue.add(run);
      if (stopping || active.value >= opts.workers) return;
      const worker = work(); // counts itself active before its first await
      workers.add(worker);
      void worker.finally(() => workers.delete(worker));
    },
    hasRoom: () => active.value < opts.workers,
    async drain(graceMs) {
      stopping = true;
      await Promise.race([Promise.all([...workers]), new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
    },
    idle: () => active.none(),
  };
}
