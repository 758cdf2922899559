// Runs queued runs in this process with bounded concurrency, composed of parts that each hold one
// role (runner/):
//   worker-pool      the workers: claim a queued run, execute it, claim the next
//   hand-off-queue   runs accepted here, handed over in memory; and whether the database holds more
//   run-executor     one run to its end (agent loop or workflow executor), a failure recorded
//   credit-ledger    what an executing run spends and how far it got, saved without holding it up
//   lease-keeper     claims as leases: renewed here, recovered when their holder died, handed back at shutdown
//   executing-runs   the runs executing here, to stop one (a cancel, a lost lease, a shutdown)
// This module wires them and runs the queue poll, the safety net: a run no notification announced
// (left by a workspace's cap, or written by another process) is picked up within QUEUE_POLL_MS;
// the poll also fails parked runs past their approval time and runs no live worker holds.
import type { Logger } from '../log';
import { APPROVAL_EXPIRED, type Store } from '../store/port';
import type { RunLimits } from './limits';
import type { ModelRegistry } from './models';
import { createRunExecutor } from './runner/run-executor';
import { ExecutingRuns } from './runner/executing-runs';
import { HandOffQueue, HAND_OFF_LIMIT } from './runner/hand-off-queue';
import { createLeaseKeeper, DEFAULT_LEASE_MS, newLease } from './runner/lease-keeper';
import type { QueuedRun } from './runner/queued-run';
import { createWorkerPool, type WorkerReservation } from './runner/worker-pool';
import type { AppRegistry } from '../apps/registry';
import type { ChannelSends, ChildWorkflows, HttpToolOptions } from '../apps/types';
import { NO_METRICS, type Metrics } from '../metrics';

export { DEFAULT_APPROVAL_TIMEOUT_MS, PROGRESS_INTERVAL_MS } from './runner/credit-ledger';
export { HAND_OFF_LIMIT } from './runner/hand-off-queue';
export { DEFAULT_LEASE_MS, INTERRUPTED, SHUT_DOWN } from './runner/lease-keeper';
export type { QueuedRun } from './runner/queued-run';
export type { WorkerReservation } from './runner/worker-pool';

/** How often idle workers look at the database's queue anyway (runs left waiting by a workspace's cap, or queued by another process). */
export const QUEUE_POLL_MS = 1000;

export interface RunnerOptions {
  store: Store;
  models: ModelRegistry;
  /** Which apps (and tools) each workspace has. */
  apps: AppRegistry;
  http: HttpToolOptions;
  /** What one run may render, hold, return and wait for. */
  limits: RunLimits;
  workers: number;
  /** Runs of one workspace executing at once, at most (the rest wait in the queue): one workspace cannot take every worker. */
  perWorkspace?: number;
  logger: Logger;
  /** Runs handed over in memory and not yet claimed, at most (default HAND_OFF_LIMIT). */
  handOffLimit?: number;
  /** Starts the child run of a workflow tool call and waits for it (services/workflow-tools.ts). */
  childWorkflows?: ChildWorkflows;
  /** Queues what an agent's channel tools send (services/channel-outbox.ts). */
  channelSends?: ChannelSends;
  /** How long a parked run waits for its held calls to be decided (default 24 hours). */
  approvalTimeoutMs?: number;
  /** How long a claim on a run lasts unless renewed (default DEFAULT_LEASE_MS). */
  leaseMs?: number;
  /** Where executions are counted and timed (default: nowhere). */
  metrics?: Metrics;
}

export interface Runner {
  start(): Promise<void>;
  /**
   * A run was queued: wake a worker. With the run (as its acceptance knows it), a worker takes it
   * from memory; without, the workers look in the database's queue.
   */
  notify(run?: QueuedRun): void;
  /**
   * A worker for a run about to be accepted, when one is free and no other run waits for one here:
   * the acceptance claims the run for it in the same write (NewRun.claim), then has it execute the
   * run, or releases it. Null otherwise.
   */
  reserveWorker(): WorkerReservation | null;
  /** A worker lent by a run that waits for the run about to be accepted (WorkerPool.lend). */
  lendWorker(): WorkerReservation | null;
  /** Stops claiming runs and waits (at most `graceMs`) for the ones executing. */
  stop(graceMs: number): Promise<void>;
  /** Resolves when no run is queued or executing (tests). */
  idle(): Promise<void>;
  /**
   * Asks run `id` to stop before its next step, when it executes in this process: resolves once
   * its end is recorded. Null when it does not execute here.
   */
  requestStop(id: string): Promise<void> | null;
}

export function createRunner(opts: RunnerOptions): Runner {
  const { store, logger } = opts;
  const executing = new ExecutingRuns();
  const lease = newLease(opts.leaseMs ?? DEFAULT_LEASE_MS);
  const leases = createLeaseKeeper({ runs: store.runs, lease, executing, logger });
  const queue = new HandOffQueue(opts.handOffLimit ?? HAND_OFF_LIMIT);
  const execute = createRunExecutor({
    runs: store.runs,
    kv: store.kv,
    models: opts.models,
    apps: opts.apps,
    http: opts.http,
    limits: opts.limits,
    executing,
    logger,
    approvalTimeoutMs: opts.approvalTimeoutMs,
    metrics: opts.metrics ?? NO_METRICS,
    childWorkflows: opts.childWorkflows,
    channelSends: opts.channelSends,
  });
  const perWorkspace = opts.perWorkspace ?? Math.max(1, opts.workers - 1);
  const pool = createWorkerPool({ runs: store.runs, queue, lease, workers: opts.workers, perWorkspace, execute, logger });
  let poller: NodeJS.Timeout | null = null;

  function pollQueue(): void {
    if (pool.hasRoom() && !queue.handedOver) pool.notifyBacklog(1);
    store.runs
      .expireApprovals(APPROVAL_EXPIRED, new Date().toISOString())
      .catch((err: unknown) => logger.error({ err }, 'could not expire runs waiting for approval'));
    leases.recover().catch((err: unknown) => logger.error({ err }, 'could not recover abandoned runs'));
  }

  return {
    async start() {
      await leases.recover(true);
      leases.startRenewing();
      store.runs.onQueued(() => pool.notify()); // another replica queued a run
      pool.notifyBacklog(); // runs queued before this start
      poller = setInterval(pollQueue, QUEUE_POLL_MS);
      poller.unref();
    },
    notify: (run) => pool.notify(run),
    reserveWorker: () => pool.reserve(),
    lendWorker: () => pool.lend(),
    async stop(graceMs) {
      if (poller) clearInterval(poller);
      await pool.drain(graceMs);
      leases.stopRenewing();
      // Runs still executing are handed back now rather than left for their leases to pass.
      await leases.handBack();
    },
    idle: () => pool.idle(),
    requestStop: (id) => executing.requestStop(id),
  };
}
