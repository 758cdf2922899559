// Schedules and poll triggers fire from the stored next due times (the store's schedules: store/port/schedules.ts). Each tick
// reads the schedules that are due and decides every due time that has come: the latest fires if it
// is within the catch-up window (the rest were missed and are recorded as skipped), unless the
// schedule's previous run is still going (recorded as an overlap). A run is started in the same
// write that moves the schedule on and records the due time (runs.ts: accept), and that write is
// conditional on the due time it read: whatever process decides a due time, and whatever crashes
// around it, it is decided once. A poll first claims its due time, then runs its detector (a
// read-only tool) and starts a run only when the output differs from the last one seen.
//
// Fair across workspaces: a tick takes a fair share of each workspace's due schedules (every
// workspace's soonest before any workspace's second), and never waits for a detector. Detectors run
// beside the ticks, at most DETECTORS_PER_WORKSPACE of one workspace at once in this process (its
// other due polls wait for a later tick, and it alone is late), each within its time budget: one
// that overruns it is recorded as failed (and backs off), not waited for.
import { dueTimesThrough, nextDueAfter, planFires } from '../domain/schedule';
import type { Logger } from '../log';
import type { RunLimits } from '../runtime/limits';
import type { HttpToolOptions } from '../apps/types';
import type { FireRow, ScheduleClaim, ScheduleRow } from '../store/port';
import type { ServiceContext } from './context';
import { createPollDetectors } from './poll-detectors';
import { fireAgentSchedule, fireWorkflowSchedule } from './schedule-fires';
import { inSpan } from '../tracing';

export { DETECTORS_PER_WORKSPACE, DETECTOR_TIMEOUT_MS, pollBackoffMs } from './poll-detectors';

/** Missed due times recorded one by one, at most (beyond, the oldest are not recorded). */
export const MISSED_RECORDED = 1000;
/** Schedules handled per tick, at most; the rest are due at the next tick. */
const DUE_PER_TICK = 500;
/** Schedules of one workspace handled per tick, at most: the others' share is kept. */
export const DUE_PER_WORKSPACE = 50;

export interface SchedulerOptions {
  /** How late a due time may still fire (the latest one after an outage). */
  catchUpMs: number;
  /** How often due schedules are looked for; 0: never (nothing fires). */
  tickMs: number;
  /** The http.request tool's limits, for poll detectors. */
  http: HttpToolOptions;
  /** What a detector's call may take and return (a run's limits). */
  limits: RunLimits;
  /** A detector's time budget (POLL_DETECTOR_TIMEOUT_SECONDS; default DETECTOR_TIMEOUT_MS). */
  detectorTimeoutMs?: number;
  logger: Logger;
}

export interface Scheduler {
  /** Decides the schedules due at `nowMs` (the timer calls it with the clock; tests with theirs). Detectors it starts go on after it. */
  tick(nowMs?: number): Promise<void>;
  /** Resolves once no detector is running (tests). */
  idle(): Promise<void>;
  /** Stops ticking; resolves once the detectors running have ended (each within its budget). */
  stop(): Promise<void>;
}

export function startScheduler(ctx: ServiceContext, opts: SchedulerOptions): Scheduler {
  const { store } = ctx;
  const { logger } = opts;
  const detectors = createPollDetectors(ctx, opts);

  async function decide(row: ScheduleRow, nowMs: number): Promise<void> {
    const expectedDue = row.next_due_at as number;
    const due = dueTimesThrough(row.cron, row.timezone, expectedDue, nowMs, MISSED_RECORDED + 1);
    const plan = planFires(due, nowMs, opts.catchUpMs);
    const claim: ScheduleClaim = {
      id: row.id,
      expectedDue,
      next: nextDueAfter(row.cron, row.timezone, nowMs),
      fires: plan.missed.map((dueAt): FireRow => ({ dueAt, outcome: 'missed' })),
    };
    if (plan.fire === null) return void (await store.schedules.advance(claim));
    ctx.metrics.scheduleFired((nowMs - plan.fire) / 1000);
    // The fire is a trace of its own: the run it queues is that trace's child (its traceparent is stored with it).
    const dueAt = plan.fire;
    const attributes = { 'build.schedule.kind': row.kind, 'build.schedule.id': row.id, 'build.schedule.due_at': new Date(dueAt).toISOString() };
    return inSpan(`${row.kind === 'poll' ? 'poll' : 'schedule'} fire`, attributes, () => fire(row, claim, dueAt, nowMs));
  }

  async function fire(row: ScheduleRow, claim: ScheduleClaim, dueAt: number, nowMs: number): Promise<void> {
    if (row.kind === 'poll') return detectors.poll(row, claim, dueAt, nowMs);
    // Overlap: the previous run is still going, so this due time is skipped rather than piled up.
    const previous = row.last_run_id ? await store.runs.find(row.last_run_id) : null;
    if (previous && (previous.status === 'queued' || previous.status === 'running')) {
      return void (await store.schedules.advance({
        ...claim,
        fires: [...claim.fires, { dueAt, outcome: 'overlap', detail: `run ${previous.id} is still ${previous.status}` }],
      }));
    }
    if (row.kind === 'agent') return fireAgentSchedule(ctx, logger, row, claim, dueAt);
    return fireWorkflowSchedule(ctx, logger, row, claim, dueAt);
  }

  let ticking: Promise<void> | null = null;
  const tick = (nowMs = Date.now()) => {
    ticking ??= (async () => {
      const rows = await store.schedules.due(nowMs, DUE_PER_TICK, DUE_PER_WORKSPACE);
      await Promise.all(
        rows.map((row) => decide(row, nowMs).catch((err: unknown) => logger.error({ err, schedule: row.id }, 'could not decide a due schedule'))),
      );
    })()
      .catch((err: unknown) => logger.error({ err }, 'scheduler tick failed'))
      .finally(() => {
        ticking = null;
      });
    return ticking;
  };
  const timer = opts.tickMs > 0 ? setInterval(() => void tick(), opts.tickMs) : null;
  timer?.unref();
  const idle = () => detectors.idle();
  return {
    tick,
    idle,
    stop: async () => {
      if (timer) clearInterval(timer);
      await ticking;
      await idle();
    },
  };
}
