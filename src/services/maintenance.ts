// Housekeeping off the request path: rows that have served their purpose are deleted in small
// batches on a timer, so no request ever waits for a large delete. Today: webhook delivery ids
// older than the 24-hour repeat window.
import type { Logger } from '../log';
import type { Store } from '../store';
import { REPEAT_WINDOW_MS } from './webhook-deliveries';

export const MAINTENANCE_INTERVAL_MS = 10 * 60_000;
const BATCH = 500;

export interface Maintenance {
  /** One pass now (tests; the timer calls it too). */
  runOnce(nowMs?: number): Promise<void>;
  stop(): void;
}

export function startMaintenance(store: Store, logger: Logger, intervalMs = MAINTENANCE_INTERVAL_MS): Maintenance {
  let running: Promise<void> | null = null;
  async function pass(nowMs: number): Promise<void> {
    const before = new Date(nowMs - REPEAT_WINDOW_MS).toISOString();
    let deleted = 0;
    for (let batch = BATCH; batch === BATCH; deleted += batch) batch = await store.webhooks.pruneDeliveries(before, BATCH);
    if (deleted) logger.debug({ deleted }, 'pruned webhook delivery ids past their repeat window');
  }
  const runOnce = (nowMs = Date.now()) => {
    running ??= pass(nowMs)
      .catch((err: unknown) => logger.error({ err }, 'maintenance pass failed'))
      .finally(() => {
        running = null;
      });
    return running;
  };
  const timer = setInterval(() => void runOnce(), intervalMs);
  timer.unref();
  return { runOnce, stop: () => clearInterval(timer) };
}
