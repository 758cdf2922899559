// Poll triggers' detectors. A poll's due time is claimed in the scheduler's tick (its row says
// `polling`), then its detector (a read-only tool) runs beside the ticks, never waited for by one:
// at most DETECTORS_PER_WORKSPACE of one workspace at once in this process (its other due polls
// wait for a later tick, and it alone is late), each within its time budget — one that overruns it
// is recorded as failed (and backs off). A run starts only when the output differs from the last
// one seen.
import crypto from 'node:crypto';
import { withoutNul } from '../domain/json-limits';
import type { Trigger } from '../domain/types';
import type { Logger } from '../log';
import { renderBudget, type RunLimits } from '../runtime/limits';
import type { HttpToolOptions } from '../apps/types';
import type { ScheduleClaim, ScheduleRow } from '../store/port';
import type { ServiceContext } from './context';
import { agentRun } from './run-builders';
import { acceptRun } from './runs';

/** Detectors of one workspace running at once in this process, at most. */
export const DETECTORS_PER_WORKSPACE = 4;
/** How long a detector may run, by default (POLL_DETECTOR_TIMEOUT_SECONDS). */
export const DETECTOR_TIMEOUT_MS = 10_000;

/** A poll detector that keeps failing waits longer each time: 1, 2, 4 … minutes, at most an hour. */
export function pollBackoffMs(failures: number): number {
  return Math.min(60, 2 ** Math.max(0, failures - 1)) * 60_000;
}

export interface PollDetectorOptions {
  /** The http.request tool's limits. */
  http: HttpToolOptions;
  /** What a detector's call may take and return (a run's limits). */
  limits: RunLimits;
  /** A detector's time budget (default DETECTOR_TIMEOUT_MS). */
  detectorTimeoutMs?: number;
  logger: Logger;
}

export interface PollDetectors {
  /**
   * A due poll: claims its due time and starts its detector (counted against its workspace's
   * detectors). Nothing when the workspace has all its detectors running: the poll stays due for a
   * later tick.
   */
  poll(row: ScheduleRow, claim: ScheduleClaim, dueAt: number, nowMs: number): Promise<void>;
  /** Resolves once no detector is running. */
  idle(): Promise<void>;
}

/** Runs a claimed poll's detector (`tools`: its http.request limits and its own run limits) and records what it saw (starting a run when the output changed). */
async function detect(
  ctx: ServiceContext,
  tools: { http: HttpToolOptions; limits: RunLimits; logger: Logger },
  row: ScheduleRow,
  dueAt: number,
  nowMs: number,
): Promise<void> {
  const agent = await ctx.store.agents.find(row.workspace_id, row.owner_id);
  const trigger = agent?.document.triggers.find((t): t is Extract<Trigger, { kind: 'poll' }> => t.id === row.trigger_id && t.kind === 'poll');
  if (!agent || !trigger) return;
  const apps = await ctx.apps.of(row.workspace_id);
  const detected = await apps.invoke(trigger.tool, trigger.args, {
    workspaceId: row.workspace_id,
    kv: ctx.store.kv,
    http: tools.http,
    limits: tools.limits,
    budget: renderBudget(tools.limits),
  });
  if (!detected.ok) {
    const retryAt = nowMs + pollBackoffMs(row.failures + 1);
    await ctx.store.schedules.recordPoll(row.id, dueAt, {
      kind: 'failed',
      error: withoutNul(`the detector ${trigger.tool} failed: ${detected.error}`),
      retryAt,
    });
    return;
  }
  const hash = crypto.hash('sha256', JSON.stringify(detected.output), 'hex');
  if (row.last_output_hash === null || row.last_output_hash === hash) {
    await ctx.store.schedules.recordPoll(row.id, dueAt, { kind: row.last_output_hash === null ? 'baseline' : 'unchanged', hash });
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
  if (outcome.status === 'raced') tools.logger.debug({ schedule: row.id }, 'the poll output changed under this poll');
}

export function createPollDetectors(ctx: ServiceContext, opts: PollDetectorOptions): PollDetectors {
  const { logger } = opts;
  const detectorLimits: RunLimits = {
    ...opts.limits,
    toolTimeoutMs: opts.detectorTimeoutMs ?? DETECTOR_TIMEOUT_MS,
    toolTimeoutSetting: 'POLL_DETECTOR_TIMEOUT_SECONDS',
  };
  /** Detectors running, by workspace; and all of them, to wait for. */
  const detecting = new Map<string, number>();
  const detectors = new Set<Promise<void>>();

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
      claimed = await ctx.store.schedules.advance({ ...claim, fires: [...claim.fires, { dueAt, outcome: 'polling' }] });
    } finally {
      if (!claimed) release();
    }
    if (!claimed) return;
    const detector = detect(ctx, { http: opts.http, limits: detectorLimits, logger }, row, dueAt, nowMs)
      .catch((err: unknown) => logger.error({ err, schedule: row.id }, 'a poll detector failed unexpectedly'))
      .finally(() => {
        release();
        detectors.delete(detector);
      });
    detectors.add(detector);
  }

  return {
    poll,
    idle: async () => {
      while (detectors.size) await Promise.all([...detectors]);
    },
  };
}
