// A background pass that every process runs on a timer (the app events' dispatch, the channels'
// sender, the evals' driver): one pass at a time; a pass asked for during one gets a pass of its own
// after it (what was written since the running pass looked is its). A failed pass is logged and the
// next one tries again.
import type { Logger } from '../log';

export interface PeriodicPass {
  /** Runs a pass now (or right after the running one); resolves when it is done. */
  run(nowMs?: number): Promise<void>;
  /** Stops the timer and waits for the pass under way. */
  stop(): Promise<void>;
}

export function periodicPass(pass: (nowMs: number) => Promise<void>, opts: { intervalMs: number; logger: Logger; what: string }): PeriodicPass {
  let passing: Promise<void> | null = null;
  let next: Promise<void> | null = null;
  const run = (nowMs?: number): Promise<void> => {
    if (passing) {
      next ??= passing.then(() => {
        next = null;
        return run(nowMs);
      });
      return next;
    }
    passing = pass(nowMs ?? Date.now())
      .catch((err: unknown) => opts.logger.error({ err }, `${opts.what} failed`))
      .finally(() => {
        passing = null;
      });
    return passing;
  };
  // 0 turns the timer off (tests drive the passes themselves).
  const timer = opts.intervalMs > 0 ? setInterval(() => void run(), opts.intervalMs) : null;
  timer?.unref();
  return {
    run,
    stop: async () => {
      if (timer) clearInterval(timer);
      await (next ?? passing);
    },
  };
}
