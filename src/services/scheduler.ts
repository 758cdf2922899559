// Schedules and poll triggers fire from the stored next due times (store/schedules.ts). Each tick
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
import crypto from 'node:crypto';
import { dueTimesThrough, nextDueAfter, planFires } from '../domain/schedule';
import { withoutNul } from '../domain/json-limits';
import { resolveInput } from '../domain/workflow';
import { describeProblems, type Agent, type Trigger } from '../domain/types';
import { ApiError } from '../errors';
import type { Logger } from '../log';
import { invokeTool } from '../runtime/tools';
import { renderBudget, type RunLimits } from '../runtime/limits';
import type { HttpToolOptions } from '../runtime/tools/types';
import type { FireRow, ScheduleClaim, ScheduleRow } from '../store';
import type { ServiceContext } from './context';
import { agentRun, workflowRun } from './run-builders';
import { acceptRun, agentsOfSteps, type RunToAccept } from './runs';

/** Missed due times recorded one by one, at most (beyond, the oldest are not recorded). */
export const MISSED_RECORDED = 1000;
/** Schedules handled per tick, at most; the rest are due at the next tick. */
const DUE_PER_TICK = 500;
/** Schedules of one workspace handled per tick, at most: the others' share is kept. */
export const DUE_PER_WORKSPACE = 50;
/** Detectors of one workspace running at once in this process, at most. */
export const DETECTORS_PER_WORKSPACE = 4;
/** How long a detector may run, by default (POLL_DETECTOR_TIMEOUT_SECONDS). */
export const DETECTOR_TIMEOUT_MS = 10_000;

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

const iso = (ms: number) => new Date(ms).toISOString();

/** A poll detector that keeps failing waits longer each time: 1, 2, 4 … minutes, at most an hour. */
export function pollBackoffMs(failures: number): number {
  return Math.min(60, 2 ** Math.max(0, failures - 1)) * 60_000;
}

export function startScheduler(ctx: ServiceContext, opts: SchedulerOptions): Scheduler {
  const { store } = ctx;
  const { logger } = opts;
  const detectorLimits: RunLimits = { ...opts.limits, toolTimeoutMs: opts.detectorTimeoutMs ?? DETECTOR_TIMEOUT_MS, toolTimeoutSetting: 'POLL_DETECTOR_TIMEOUT_SECONDS' };
  /** Detectors running, by workspace; and all of them, to wait for. */
  const detecting = new Map<string, number>();
  const detectors = new Set<Promise<void>>();

  /** The run of a due time, its fire recorded with it; a run the store refuses for credits is recorded as refused. */
  async function start(run: Omit<RunToAccept, 'fire'>, claim: ScheduleClaim, dueAt: number): Promise<void> {
    const { outcome } = await acceptRun(ctx, { ...run, fire: { kind: 'schedule', claim, dueAt } });
    if (outcome.status === 'raced') logger.debug({ schedule: claim.id }, 'another process decided this due time');
  }

  /** A due time that starts no run: recorded as failed with why. */
  const failed = (claim: ScheduleClaim, dueAt: number, detail: string) =>
    store.schedules.advance({ ...claim, fires: [...claim.fires, { dueAt, outcome: 'failed', detail: withoutNul(detail) }] });

  async function fireAgentSchedule(row: ScheduleRow, claim: ScheduleClaim, dueAt: number): Promise<void> {
    const agent = await store.agents.find(row.workspace_id, row.owner_id);
    if (!agent) return void (await failed(claim, dueAt, 'the agent no longer exists'));
    const doc: Agent = agent.document;
    const prompt = doc.schedule.prompt ?? `Scheduled run (${row.cron}, ${row.timezone}) due at ${iso(dueAt)}.`;
    const origin = { workspaceId: row.workspace_id, startedBy: `schedule:${row.id}`, source: 'schedule' };
    await start(agentRun(agent, { prompt, schedule: { due_at: iso(dueAt) } }, origin), claim, dueAt);
  }

  async function fireWorkflowSchedule(row: ScheduleRow, claim: ScheduleClaim, dueAt: number): Promise<void> {
    const workflow = await store.workflows.find(row.workspace_id, row.owner_id);
    if (!workflow) return void (await failed(claim, dueAt, 'the workflow no longer exists'));
    // A scheduled run has no caller to give inputs: every input takes its default.
    const { input, problems } = resolveInput(workflow.document, {});
    if (problems.length) return void (await failed(claim, dueAt, `a scheduled run uses the inputs' defaults: ${describeProblems(problems)}`));
    let stepAgents: Record<string, Agent> | undefined;
    try {
      stepAgents = await agentsOfSteps(ctx, row.workspace_id, workflow.document);
    } catch (err) {
      if (err instanceof ApiError) return void (await failed(claim, dueAt, err.message));
      throw err;
    }
    const origin = { workspaceId: row.workspace_id, startedBy: `schedule:${row.id}`, source: 'schedule' };
    await start(workflowRun(workflow, input, stepAgents, origin), claim, dueAt);
  }

  /**
   * A poll: its due time is claimed in the tick, its detector runs beside the ticks (counted against
   * its workspace's detectors). Nothing when the workspace has all its detectors running: the poll
   * stays due for a later tick.
   */
  async function poll(row: ScheduleRow, claim: ScheduleClaim, dueAt: number, nowMs: number): Promise<void> {
    const ws = row.workspace_id;
    if ((detecting.get(ws) ?? 0) >= DETECTORS_PER_WORKSPACE) return;
    detecting.set(ws, (detecting.get(ws) ?? 0) + 1); // taken before the claim: the tick decides its due polls together
    const release = () => {
      const left = (detecting.get(ws) ?? 1) - 1;
      if (left > 0) detecting.set(ws, left);
      else detecting.delete(ws);
    };
    // The due time is claimed first (its row says `polling`): a crash while the detector runs loses
    // this one poll, never doubles it; the next poll sees the change all the same.
    let claimed = false;
    try {
      claimed = await store.schedules.advance({ ...claim, fires: [...claim.fires, { dueAt, outcome: 'polling' }] });
    } finally {
      if (!claimed) release();
    }
    if (!claimed) return;
    const detector = detect(row, dueAt, nowMs)
      .catch((err: unknown) => logger.error({ err, schedule: row.id }, 'a poll detector failed unexpectedly'))
      .finally(() => {
        release();
        detectors.delete(detector);
      });
    detectors.add(detector);
  }

  /** Runs a claimed poll's detector and records what it saw (starting a run when the output changed). */
  async function detect(row: ScheduleRow, dueAt: number, nowMs: number): Promise<void> {
    const agent = await store.agents.find(row.workspace_id, row.owner_id);
    const trigger = agent?.document.triggers.find((t): t is Extract<Trigger, { kind: 'poll' }> => t.id === row.trigger_id && t.kind === 'poll');
    if (!agent || !trigger) return;
    const detected = await invokeTool(trigger.tool, trigger.args, {
      workspaceId: row.workspace_id,
      kv: store.kv,
      http: opts.http,
      limits: detectorLimits,
      budget: renderBudget(detectorLimits),
    });
    if (!detected.ok) {
      const retryAt = nowMs + pollBackoffMs(row.failures + 1);
      await store.schedules.recordPoll(row.id, dueAt, { kind: 'failed', error: withoutNul(`the detector ${trigger.tool} failed: ${detected.error}`), retryAt });
      return;
    }
    const hash = crypto.hash('sha256', JSON.stringify(detected.output), 'hex');
    if (row.last_output_hash === null || row.last_output_hash === hash) {
      await store.schedules.recordPoll(row.id, dueAt, { kind: row.last_output_hash === null ? 'baseline' : 'unchanged', hash });
      return;
    }
    const input = { output: detected.output, previous_output_hash: row.last_output_hash };
    const intro = trigger.prompt ?? `The poll trigger '${trigger.name}' saw new output from ${trigger.tool}.`;
    const request = { prompt: `${intro}\n\nDetector output:\n${JSON.stringify(detected.output)}`, input };
    const { outcome } = await acceptRun(
      ctx,
      agentRun(agent, request, {
        workspaceId: row.workspace_id,
        startedBy: `poll:${trigger.id}`,
        source: 'poll',
        triggerId: trigger.id,
        fire: { kind: 'poll', scheduleId: row.id, dueAt, seenHash: row.last_output_hash, newHash: hash },
      }),
    );
    if (outcome.status === 'raced') logger.debug({ schedule: row.id }, 'the poll output changed under this poll');
  }

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
    if (row.kind === 'poll') return poll(row, claim, plan.fire, nowMs);
    // Overlap: the previous run is still going, so this due time is skipped rather than piled up.
    const previous = row.last_run_id ? await store.runs.find(row.last_run_id) : null;
    if (previous && (previous.status === 'queued' || previous.status === 'running')) {
      return void (await store.schedules.advance({ ...claim, fires: [...claim.fires, { dueAt: plan.fire, outcome: 'overlap', detail: `run ${previous.id} is still ${previous.status}` }] }));
    }
    if (row.kind === 'agent') return fireAgentSchedule(row, claim, plan.fire);
    return fireWorkflowSchedule(row, claim, plan.fire);
  }

  let ticking: Promise<void> | null = null;
  const tick = (nowMs = Date.now()) => {
    ticking ??= (async () => {
      const rows = await store.schedules.due(nowMs, DUE_PER_TICK, DUE_PER_WORKSPACE);
      await Promise.all(rows.map((row) => decide(row, nowMs).catch((err: unknown) => logger.error({ err, schedule: row.id }, 'could not decide a due schedule'))));
    })()
      .catch((err: unknown) => logger.error({ err }, 'scheduler tick failed'))
      .finally(() => {
        ticking = null;
      });
    return ticking;
  };
  const timer = opts.tickMs > 0 ? setInterval(() => void tick(), opts.tickMs) : null;
  timer?.unref();
  const idle = async () => {
    while (detectors.size) await Promise.all([...detectors]);
  };
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
