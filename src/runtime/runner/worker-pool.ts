// Up to `workers` workers, each claiming a queued run, executing it, and claiming the next until it
// finds none. A run handed over in memory is claimed by one conditional UPDATE; otherwise the
// oldest claimable run is claimed from the database's queue. The database's queue is the truth: a
// run is claimed by exactly one worker of any process, whatever was handed over where. A claim is
// refused for a run whose workspace already has `perWorkspace` runs executing: one workspace cannot
// take every worker. A worker can also be reserved by a run's acceptance, which claims its run for
// it in the same write (NewRun.claim): the worker starts with that run, or is let go when the
// acceptance did not claim it.
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

/** A worker reserved for a run being accepted, with what the acceptance's claim needs. */
export interface WorkerReservation {
  readonly lease: Lease;
  /** Runs of one workspace executing at once, at most: the acceptance claims under it. */
  readonly cap: number;
  /** The acceptance claimed `run`: the reserved worker executes it, then goes on as any worker. */
  execute(run: QueuedRun): void;
  /** The acceptance did not claim a run (refused, at its workspace's cap, failed): the worker is let go. */
  release(): void;
}

export interface WorkerPool {
  /**
   * A run was queued: adds a worker unless all are busy (each queued run notifies once, so busy
   * periods fill up to `workers`). With the run, a worker takes it from memory; without, the
   * workers look in the database's queue.
   */
  notify(run?: QueuedRun): void;
  /**
   * Runs may wait in the database that nobody announced (at start, at the queue poll): `looks` free
   * workers (default: all) look, each goes on while it finds some, and each find brings in another
   * free worker.
   */
  notifyBacklog(looks?: number): void;
  /** Whether a worker could be added. */
  hasRoom(): boolean;
  /**
   * A worker for a run about to be accepted, if one is free and no run waits here for a worker (it
   * would go first); null otherwise. It must be executed or released.
   */
  reserve(): WorkerReservation | null;
  /**
   * A worker for a run about to be accepted that a run executing here starts and waits for (a
   * workflow an agent calls as a tool): the waiting run lends its worker, so the child neither
   * waits for a free one nor counts against its workspace's cap. It executes that one run and
   * leaves. At most `workers` are lent at once (and chains are bounded: domain/run-lineage.ts);
   * null beyond, or while stopping.
   */
  lend(): WorkerReservation | null;
  /** Stops claiming runs and waits (at most `graceMs`) for the workers to end. */
  drain(graceMs: number): Promise<void>;
  /** Resolves when no worker is working. */
  idle(): Promise<void>;
}

/** The workers working (each counted until it calls leave), their work until it ends, and who waits for there to be none. */
class ActiveWorkers {
  private count = 0;
  private waiters: (() => void)[] = [];
  private readonly works = new Set<Promise<void>>();

  get value(): number {
    return this.count;
  }

  /** Counts a worker active, then starts its work (which calls leave when it ends). */
  start(work: () => Promise<void>): void {
    this.count++;
    const started = work();
    this.works.add(started);
    void started.finally(() => this.works.delete(started));
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

  /** Resolves when the work of every worker started so far has ended, or after `graceMs`. */
  async ended(graceMs: number): Promise<void> {
    await Promise.race([Promise.all([...this.works]), new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
  }
}

/**
 * A worker counted active now, for a run being accepted: given the run the acceptance claimed, it
 * works from there; released, it leaves, then calls `released`.
 */
function reservedWorker(
  active: ActiveWorkers,
  claim: { lease: Lease; cap: number },
  work: (first: QueuedRun) => Promise<void>,
  released: () => void,
): WorkerReservation {
  let handOver!: (run: QueuedRun | null) => void;
  active.start(async () => {
    const run = await new Promise<QueuedRun | null>((resolve) => (handOver = resolve));
    if (run) return work(run);
    active.leave();
    released();
  });
  return { ...claim, execute: (run) => handOver(run), release: () => handOver(null) };
}

/** The workspace cap a lent worker's claim is made under: none, in effect (its parent holds a place). */
const LENT_CAP = 1_000_000;

/** A worker counted active now that executes only the run its acceptance claims, then leaves (and calls `returned`). */
function lentWorker(active: ActiveWorkers, lease: Lease, execute: (run: QueuedRun) => Promise<void>, returned: () => void): WorkerReservation {
  let handOver!: (run: QueuedRun | null) => void;
  active.start(async () => {
    const run = await new Promise<QueuedRun | null>((resolve) => (handOver = resolve));
    try {
      if (run) await execute(run);
    } finally {
      active.leave();
      returned();
    }
  });
  return { lease, cap: LENT_CAP, execute: (run) => handOver(run), release: () => handOver(null) };
}

// This function is long because its parts share one state, read and changed with no await between:
// the workers counted active, the runs executing, and whether the pool is stopping.
export function createWorkerPool(opts: WorkerPoolOptions): WorkerPool {
  const { runs, queue, lease, logger } = opts;
  const cap = opts.perWorkspace;
  let executing = 0;
  /** Workers lent to child runs (lend), working or reserved. */
  let lent = 0;
  const active = new ActiveWorkers();
  let stopping = false;

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
    // A backlog found: one more free worker joins in, so a poll's single look grows to every worker.
    if (queue.inBacklog) addBacklogLooks(1);
    await ranOne(fromRow(row));
  }

  /** A worker (counted active by active.start); it starts with `first` when given one. */
  async function work(first?: QueuedRun): Promise<void> {
    try {
      if (first) await ranOne(first);
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

  const hasRoom = () => active.value < opts.workers;
  /** Adds a worker, unless stopping or every worker is busy. */
  const addWorker = () => {
    if (!stopping && hasRoom()) active.start(() => work());
  };
  /** Declares a backlog for up to `looks` free workers and adds them. */
  const addBacklogLooks = (looks: number) => {
    const added = Math.min(looks, opts.workers - active.value);
    if (stopping || added <= 0) return;
    queue.declareBacklog(added);
    for (let i = 0; i < added; i++) addWorker();
  };

  return {
    notify(run) {
      queue.add(run);
      addWorker();
    },
    notifyBacklog: (looks = opts.workers) => addBacklogLooks(looks),
    hasRoom,
    reserve() {
      if (stopping || !hasRoom() || queue.waiting) return null;
      // A run notified while this worker was reserved may have found no room: let go, it makes room for one.
      return reservedWorker(active, { lease, cap }, work, () => queue.waiting && addWorker());
    },
    lend() {
      // At most as many lent as the pool has workers: a workflow's concurrent agent steps, each
      // calling a workflow whose steps call more, could otherwise fan out past any bound. Beyond,
      // the child is accepted as any run (a free worker, or the queue) and its caller's wait ends
      // at its bound.
      if (stopping || lent >= opts.workers) return null;
      lent++;
      return lentWorker(active, lease, ranOne, () => lent--);
    },
    async drain(graceMs) {
      stopping = true;
      await active.ended(graceMs);
    },
    idle: () => active.none(),
  };
}
