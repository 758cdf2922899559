// The runs executing in this process: how to ask each to stop, and when each has ended. The lease
// keeper renews their leases (and stops the ones another process took over), a cancel asks one to
// stop and waits for its end, and a shutdown hands back those still executing.

interface Executing {
  stop: () => void;
  ended: Promise<void>;
}

export class ExecutingRuns {
  private readonly runs = new Map<string, Executing>();

  /** Runs `body` as the execution of run `id`: listed, stoppable with `stop`, until `body` settles. */
  async track(id: string, stop: () => void, body: () => Promise<void>): Promise<void> {
    let ended = () => {};
    this.runs.set(id, { stop, ended: new Promise<void>((resolve) => (ended = resolve)) });
    try {
      await body();
    } finally {
      this.runs.delete(id);
      ended();
    }
  }

  /** The ids of the runs executing here. */
  ids(): string[] {
    return [...this.runs.keys()];
  }

  get size(): number {
    return this.runs.size;
  }

  /** Asks run `id` to stop, if it executes here. */
  stop(id: string): void {
    this.runs.get(id)?.stop();
  }

  stopAll(): void {
    for (const run of this.runs.values()) run.stop();
  }

  /** Asks run `id` to stop: resolves once its end is recorded. Null when it does not execute here. */
  requestStop(id: string): Promise<void> | null {
    const executing = this.runs.get(id);
    if (!executing) return null;
    executing.stop();
    return executing.ended;
  }
}
