// Where this process's workers find queued runs: handed over in memory by their acceptance (oldest
// first, at most a limit), or in the database's queue. The queue only keeps count of the latter —
// the database is the truth, and a worker claims from it — and of whether a run was left there
// because its workspace was at its cap (then, when any run ends here, the workers look again).
//
// Looks in the database are rationed: one look per run it may hold that no look has accounted for.
// Each run this process is told of and does not hold in memory counts one; a look that claims a
// run accounts for one, a look that finds none for every run counted before it began. Without the
// ration, every worker looked again whenever any run had been counted meanwhile: under a steady
// stream of runs (another replica's notifications, say) idle workers claimed in a loop, most
// claims finding nothing (issue 25, docs/benchmarks.md).
//
// A backlog (runs queued before this start, or found by the queue poll) has no count: while one is
// declared, a look that claims a run accounts for none, so each worker goes on claiming as soon as
// its run ends, until a look begun after the declaration finds nothing claimable. Counted one run at
// a time instead, a backlog drained at the poll's pace, one run a second (issue 42).
import type { QueuedRun } from './queued-run';

/** Runs handed over in memory and not yet claimed, at most; beyond, the database's queue holds them. */
export const HAND_OFF_LIMIT = 1024;

/** A look in the database under way: how many runs had been counted when it began. */
export interface Look {
  readonly countedBefore: number;
}

export class HandOffQueue {
  /** Runs handed over in memory, oldest first. */
  private readonly handed: QueuedRun[] = [];
  // Runs the database may hold that were not handed over, counted since start (as the runner
  // notifies once per worker then), and how many of them looks have accounted for.
  private counted = 0;
  private accounted = 0;
  private looking = 0;
  // A run left queued because its workspace was at its cap: when any run ends, the workers look again.
  private deferred = false;
  // A backlog declared (see above): the count of runs when it was, or null when none is; and
  // whether a look has claimed a run of it.
  private backlogFrom: number | null = null;
  private backlogFound = false;

  constructor(private readonly limit = HAND_OFF_LIMIT) {}

  /** Runs the database may hold that no look has accounted for. */
  get unaccounted(): number {
    return this.counted - this.accounted;
  }

  /**
   * A run was queued. With the run, it is kept in memory — unless the memory is full or the
   * database may hold runs not handed over, which go first (oldest first, so a backlog is not
   * starved by newer runs handed over). Without it, or beyond, the workers look in the database.
   */
  add(run?: QueuedRun): void {
    if (run && this.handed.length < this.limit && !this.unaccounted) this.handed.push(run);
    else this.counted++;
  }

  /** The oldest run handed over, taken out; undefined when none is. */
  take(): QueuedRun | undefined {
    return this.handed.shift();
  }

  /** Runs handed over and not taken. */
  get handedOver(): number {
    return this.handed.length;
  }

  /** Whether a run waits here for a worker: handed over, or counted and not yet looked for. */
  get waiting(): boolean {
    return this.handed.length > 0 || this.unaccounted > 0;
  }

  /**
   * The database may hold any number of queued runs nobody counted (at start; at the queue poll):
   * `workers` looks begin at once, and each worker that claims one looks again when its run ends.
   */
  declareBacklog(workers: number): void {
    this.counted += workers;
    if (this.backlogFrom === null) this.backlogFound = false;
    this.backlogFrom = this.counted;
  }

  /** Whether a backlog is declared and no look begun since has found it empty. */
  get inBacklog(): boolean {
    return this.backlogFrom !== null;
  }

  /** A look in the database to make, or null when the looks under way cover every run counted. */
  startLook(): Look | null {
    if (this.unaccounted <= this.looking) return null;
    this.looking++;
    return { countedBefore: this.counted };
  }

  /** The look claimed a run: one run accounted for (none in a backlog, which has no count). */
  found(): void {
    this.looking--;
    if (this.backlogFrom !== null) this.backlogFound = true;
    else if (this.accounted < this.counted) this.accounted++;
  }

  /**
   * The look found nothing claimable: every run counted before it began is accounted for (claimed
   * by someone, or waiting for its workspace's cap); runs counted since may be newer than what it
   * saw. With nothing executing here (`executingHere`), no run of ours will free a workspace's cap
   * (runs another process executes are the queue poll's to notice).
   */
  foundNone(look: Look, executingHere: number): void {
    this.looking--;
    this.accounted = Math.max(this.accounted, look.countedBefore);
    if (this.backlogFrom !== null && look.countedBefore >= this.backlogFrom) {
      // What a backlog that found runs left behind may wait for its workspaces' caps, which runs ending here free.
      this.backlogFrom = null;
      if (this.backlogFound && executingHere > 0) this.deferred = true;
    }
    if (executingHere === 0) this.deferred = false;
  }

  /** The look failed (the database away): it accounts for nothing. */
  lookFailed(): void {
    this.looking--;
  }

  /** The database may hold a queued run no longer in memory (a worker stopped while holding one): the next worker looks there. */
  lookInTable(): void {
    this.counted++;
  }

  /** A handed-over run could not be claimed: another worker took it first, or its workspace is at its cap (it waits in the table). */
  claimRefused(): void {
    this.deferred = true;
  }

  /** A run executing here ended: runs left waiting by a workspace's cap may go, so the workers look in the table. */
  runEnded(): void {
    if (this.deferred) this.counted++;
  }
}
