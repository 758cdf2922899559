// Housekeeping off the request path: rows that have served their purpose are deleted in small
// batches on a timer, so no request ever waits for a large delete: webhook and app-event delivery
// ids past EVENT_KEPT_MS (8 days; a webhook's repeat window is the first 24 hours of it),
// idempotency keys past their 24-hour window, retired webhook secrets after RETIRED_SECRET_KEEP_MS
// (their old URLs then answer 404 rather than 410), and finished runs (with their events and
// approvals) and the agents' channel messages older than the retention age, and the versions of agents, workflows and skills beyond the
// newest VERSIONS_KEPT of each document that no run names, and the request quotas' counters of
// windows that have ended.
import type { Logger } from '../log';
import type { Store } from '../store/port';
import { IDEMPOTENCY_WINDOW_MS } from './idempotency';
import { EVENT_KEPT_MS } from './app-events';
import { SENDER_WINDOW_MS } from './channel-inbound';

export const MAINTENANCE_INTERVAL_MS = 10 * 60_000;
export const DEFAULT_RUN_RETENTION_MS = 30 * 86_400_000;
/** How long a retired webhook secret is remembered, so that its URL answers 410 (gone) rather than 404. */
export const RETIRED_SECRET_KEEP_MS = 30 * 86_400_000;
/** The versions each document keeps by default (besides those runs name). */
export const DEFAULT_VERSIONS_KEPT = 100;
const BATCH = 500;
/** A run's rows are several (the run, its events, its approvals): fewer runs per batch. */
const RUN_BATCH = 100;

export interface Maintenance {
  /** One pass now (tests; the timer calls it too). */
  runOnce(nowMs?: number): Promise<void>;
  stop(): void;
}

export interface MaintenanceOptions {
  intervalMs?: number;
  /** How long finished runs are kept (RUN_RETENTION_DAYS). */
  runRetentionMs?: number;
  /** The versions each document keeps besides those runs name (VERSIONS_KEPT). */
  versionsKept?: number;
  /** The request quotas' window (RATE_LIMIT_WINDOW_SECONDS): counters of windows before the last are forgotten. */
  quotaWindowMs?: number;
}

/** Calls `prune` (which deletes at most `batch` rows) until a call deletes fewer; how many in all. */
async function inBatches(batch: number, prune: (limit: number) => Promise<number>): Promise<number> {
  let deleted = 0;
  for (let last = batch; last === batch; deleted += last) last = await prune(batch);
  return deleted;
}

export function startMaintenance(store: Store, logger: Logger, opts: MaintenanceOptions = {}): Maintenance {
  const retention = opts.runRetentionMs ?? DEFAULT_RUN_RETENTION_MS;
  const versionsKept = opts.versionsKept ?? DEFAULT_VERSIONS_KEPT;
  const quotaWindowMs = opts.quotaWindowMs ?? 60_000;
  let running: Promise<void> | null = null;
  async function pass(nowMs: number): Promise<void> {
    const before = (ms: number) => new Date(nowMs - ms).toISOString();
    const deliveries = await inBatches(BATCH, (n) => store.webhooks.pruneDeliveries(before(EVENT_KEPT_MS), n));
    const keys = await inBatches(BATCH, (n) => store.idempotency.prune(before(IDEMPOTENCY_WINDOW_MS), n));
    const retired = await inBatches(BATCH, (n) => store.webhooks.pruneRetired(before(RETIRED_SECRET_KEEP_MS), n));
    const runs = await inBatches(RUN_BATCH, (n) => store.runs.pruneFinished(before(retention), n));
    // Channel messages as long as runs, and the senders' rate windows that ended.
    const messages = await inBatches(BATCH, (n) => store.channelMessages.prune(before(retention), n, Math.floor(nowMs / SENDER_WINDOW_MS)));
    // Evals as long as runs, from their end (their runs go by the runs' own retention).
    const evals = await inBatches(BATCH, (n) => store.evals.prune(before(retention), n));
    // After the runs: a version only a pruned run named goes in the same pass.
    const versions =
      (await inBatches(BATCH, (n) => store.agents.versions.prune(versionsKept, n))) +
      (await inBatches(BATCH, (n) => store.workflows.versions.prune(versionsKept, n))) +
      (await inBatches(BATCH, (n) => store.skills.versions.prune(versionsKept, n))) +
      (await inBatches(BATCH, (n) => store.evalDatasets.versions.prune(versionsKept, n)));
    const quotas = await inBatches(BATCH, (n) => store.quotas.prune(Math.floor(nowMs / quotaWindowMs) - 1, n));
    if (deliveries + keys + retired + runs + messages + evals + versions + quotas)
      logger.debug({ deliveries, keys, retired, runs, messages, evals, versions, quotas }, 'pruned rows past their keeping time');
  }
  const runOnce = (nowMs = Date.now()) => {
    running ??= pass(nowMs)
      .catch((err: unknown) => logger.error({ err }, 'maintenance pass failed'))
      .finally(() => {
        running = null;
      });
    return running;
  };
  const timer = setInterval(() => void runOnce(), opts.intervalMs ?? MAINTENANCE_INTERVAL_MS);
  timer.unref();
  return { runOnce, stop: () => clearInterval(timer) };
}
