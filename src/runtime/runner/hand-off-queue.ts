// Where this process's workers find queued runs: handed over in memory by their acceptance (oldest
// first, at most a limit), or in the database's queue. The queue only keeps count of the latter —
// the database is the truth, and a worker claims from it — and of whether a run was left there
// because its workspace was at its cap (then, when any run ends here, the workers look again).
import type { QueuedRun } from './queued-run';

/** Runs handed over in memory and not yet claimed, at most; beyond, the database's queue holds them. */
export const HAND_OFF_LIMIT = 1024;

export class HandOffQueue {
  /** Runs handed over in memory, oldest first. */
  private readonly handed: QueuedRun[] = [];
  // Whether the database may hold queued runs that were not handed over (true at start, as the
  // runner notifies once per worker then). Counted, so a worker that found that queue empty can
  // tell whether a run was queued while it looked.
  private backlog = 0;
  // A run left queued because its workspace was at its cap: when any run ends, the workers look again.
  private deferred = false;

  constructor(private readonly limit = HAND_OFF_LIMIT) {}

  /**
   * A run was queued. With the run, it is kept in memory — unless the memory is full or the
   * database holds runs not handed over, which go first (oldest first, so a backlog is not starved
   * by newer runs handed over). Without it, or beyond, the workers look in the database.
   */
  add(run?: QueuedRun): void {
    if (run && this.handed.length < this.limit && !this.backlog) this.handed.push(run);
    else this.backlog++;
  }

  /** The oldest run handed over, taken out; undefined when none is. */
  take(): QueuedRun | undefined {
    return this.handed.shift();
  }

  /** Runs handed over and not taken. */
  get handedOver(): number {
    return this.handed.length;
  }

  /** A mark to pass to `foundNone` after looking in the database; 0 when it holds nothing to look for. */
  tableMark(): number {
    return this.backlog;
  }

  /** The database may hold a queued run no longer in memory (a worker stopped while holding one): the next worker looks there. */
  lookInTable(): void {
    this.backlog++;
  }

  /**
   * A look in the database (begun at `mark`) found nothing claimable. Unless a run was queued
   * since, the workers stop looking; and with nothing executing here (`executingHere`), no run of
   * ours will free a workspace's cap (runs another process executes are the queue poll's to notice).
   */
  foundNone(mark: number, executingHere: number): void {
    if (mark !== this.backlog) return;
    this.backlog = 0;
    if (executingHere === 0) this.deferred = false;
  }

  /** A handed-over run could not be claimed: another worker took it first, or its workspace is at its cap (it waits in the table). */
  claimRefused(): void {
    this.deferred = true;
  }

  /** A run executing here ended: runs left waiting by a workspace's cap may go, so the workers look in the table. */
  runEnded(): void {
    if (this.deferred) this.backlog++;
  }
}
