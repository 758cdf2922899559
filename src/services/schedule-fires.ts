// A schedule's due time that fires: the run of its agent or workflow, started in the same write
// that records the due time (runs.ts: accept, conditional on the due time read), or the due time
// recorded as failed with why when no run can start (the document is gone, a workflow's inputs
// have no defaults, an agent step's agent is archived).
import { withoutNul } from '../domain/json-limits';
import { resolveInput } from '../domain/workflow';
import { describeProblems, type Agent } from '../domain/types';
import { ApiError } from '../errors';
import type { Logger } from '../log';
import type { ScheduleClaim, ScheduleRow } from '../store/port';
import type { ServiceContext } from './context';
import { agentRun, workflowRun } from './run-builders';
import type { RunToAccept } from './run-builders';
import { acceptRun, agentsOfSteps } from './runs';

const iso = (ms: number) => new Date(ms).toISOString();

/** The run of a due time, its fire recorded with it; a run the store refuses for credits is recorded as refused. */
async function start(ctx: ServiceContext, logger: Logger, run: Omit<RunToAccept, 'fire'>, claim: ScheduleClaim, dueAt: number): Promise<void> {
  const { outcome } = await acceptRun(ctx, { ...run, fire: { kind: 'schedule', claim, dueAt } });
  if (outcome.status === 'raced') logger.debug({ schedule: claim.id }, 'another process decided this due time');
}

/** A due time that starts no run: recorded as failed with why. */
const failed = (ctx: ServiceContext, claim: ScheduleClaim, dueAt: number, detail: string) =>
  ctx.store.schedules.advance({ ...claim, fires: [...claim.fires, { dueAt, outcome: 'failed', detail: withoutNul(detail) }] });

export async function fireAgentSchedule(ctx: ServiceContext, logger: Logger, row: ScheduleRow, claim: ScheduleClaim, dueAt: number): Promise<void> {
  const agent = await ctx.store.agents.find(row.workspace_id, row.owner_id);
  if (!agent) return void (await failed(ctx, claim, dueAt, 'the agent no longer exists'));
  const doc: Agent = agent.document;
  const prompt = doc.schedule.prompt ?? `Scheduled run (${row.cron}, ${row.timezone}) due at ${iso(dueAt)}.`;
  const origin = { workspaceId: row.workspace_id, startedBy: `schedule:${row.id}`, source: 'schedule' };
  await start(ctx, logger, agentRun(agent, { prompt, schedule: { due_at: iso(dueAt) } }, origin), claim, dueAt);
}

export async function fireWorkflowSchedule(ctx: ServiceContext, logger: Logger, row: ScheduleRow, claim: ScheduleClaim, dueAt: number): Promise<void> {
  const workflow = await ctx.store.workflows.find(row.workspace_id, row.owner_id);
  if (!workflow) return void (await failed(ctx, claim, dueAt, 'the workflow no longer exists'));
  // A scheduled run has no caller to give inputs: every input takes its default.
  const { input, problems } = resolveInput(workflow.document, {});
  if (problems.length) return void (await failed(ctx, claim, dueAt, `a scheduled run uses the inputs' defaults: ${describeProblems(problems)}`));
  let stepAgents: Record<string, Agent> | undefined;
  try {
    stepAgents = await agentsOfSteps(ctx, row.workspace_id, workflow.document);
  } catch (err) {
    if (err instanceof ApiError) return void (await failed(ctx, claim, dueAt, err.message));
    throw err;
  }
  const origin = { workspaceId: row.workspace_id, startedBy: `schedule:${row.id}`, source: 'schedule' };
  await start(ctx, logger, workflowRun(workflow, input, stepAgents, origin), claim, dueAt);
}
