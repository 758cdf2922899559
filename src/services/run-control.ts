// Steering runs: cancelling them, and deciding the tool calls an approval policy held. Each is one
// conditional write in the store (whoever writes first wins; the other learns it from the outcome).
import type { components } from '../../generated/api';
import { ApiError, notFound } from '../errors';
import type { RunKind } from '../store/port';
import type { Principal, ServiceContext } from './context';
import { findRun, getAgentRun, getWorkflowRun } from './runs';
import { cancelChildren } from './workflow-tools';

type AgentRun = components['schemas']['AgentRun'];
type WorkflowRun = components['schemas']['WorkflowRun'];

/** How often a cancel looks at a run executing in another process while it waits. */
const CANCEL_POLL_MS = 50;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** Waits (at most ctx.cancelWaitMs: the tool call or step in flight must end) for a run asked to stop to leave `running`. */
async function awaitStop(ctx: ServiceContext, runId: string): Promise<void> {
  const deadline = Date.now() + ctx.cancelWaitMs;
  const here = ctx.requestRunStop(runId);
  if (here) {
    await Promise.race([here, sleep(ctx.cancelWaitMs)]);
    return;
  }
  while (Date.now() < deadline) {
    const run = await ctx.store.runs.find(runId);
    if (run?.status !== 'running') return;
    await sleep(CANCEL_POLL_MS);
  }
}

/**
 * Cancels a run, and the runs its workflow tool calls started: `stopped` when it ended cancelled (now or by an earlier cancel), false when it is
 * still finishing work in flight. A run that ended otherwise is 409.
 */
export async function cancelRun<K extends RunKind>(
  ctx: ServiceContext,
  who: Principal,
  runId: string,
  kind: K,
): Promise<{ stopped: boolean; run: K extends 'agent' ? AgentRun : WorkflowRun }> {
  const { id } = await findRun(ctx, who, runId, kind);
  const outcome = await ctx.store.runs.cancel(id, who.userId, new Date().toISOString());
  const ended = (status: string) => new ApiError(409, `run '${id}' already ended (${status}); only a queued, running or waiting run can be cancelled`);
  if (outcome.outcome === 'missing') throw notFound(`run '${runId}' not found: no ${kind} run you may read has this id`);
  if (outcome.outcome === 'finished') throw ended(outcome.status);
  // The workflows its tool calls started go with it (and theirs): a waiting call then ends at once.
  await cancelChildren(ctx, await ctx.store.runs.activeChildren(id), who.userId);
  if (outcome.outcome === 'requested') await awaitStop(ctx, id);
  const run = (kind === 'agent' ? await getAgentRun(ctx, who, id) : await getWorkflowRun(ctx, who, id)) as K extends 'agent' ? AgentRun : WorkflowRun;
  // The run may have ended on its own before it reached a point where it stops: that end stands.
  if (run.status !== 'cancelled' && run.status !== 'running') throw ended(run.status);
  return { stopped: run.status === 'cancelled', run };
}

/** Records a decision on a held tool call; the run's last decision queues it again for a worker. */
export async function decideToolCall(
  ctx: ServiceContext,
  who: Principal,
  runId: string,
  callId: string,
  decision: { decision: 'approve' | 'reject'; note?: string },
): Promise<AgentRun> {
  const { id } = await findRun(ctx, who, runId, 'agent');
  const outcome = await ctx.store.runs.decide(id, callId, decision.decision, decision.note ?? null, who.userId, new Date().toISOString());
  switch (outcome.outcome) {
    case 'no_call':
      throw notFound(`callId: run '${id}' has no tool call '${callId}' held for approval`);
    case 'decided_before': {
      const first = outcome.approval;
      throw new ApiError(409, `callId: tool call '${callId}' was already decided: ${first.decision} by ${first.decided_by} at ${first.decided_at}`);
    }
    case 'not_waiting': {
      const run = await ctx.store.runs.find(id);
      const why = run?.error ? ` (${run.error})` : '';
      throw new ApiError(409, `run '${id}' is not waiting for approval: it is ${outcome.status}${why}`);
    }
    case 'resumed':
      ctx.notifyRunQueued(); // a worker takes it from the queue and resumes it from its stored state
      break;
    case 'decided':
      break;
  }
  return getAgentRun(ctx, who, id);
}
