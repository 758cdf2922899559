// A workflow called as an agent's tool (`workflows.<slug>`): the call starts a child workflow run
// (source `tool`), linked both ways (the child's `parent` names the calling run and call; the
// call's record names the child), waits for it within a bound, and answers with the workflow's
// output or its error, or, past the bound, with the child's id and that it is still going. The
// child is a run as any other: it reserves and spends its own credits, its events stream, and it
// can be cancelled; cancelling the calling run cancels it (cancelChildren).
import type { ChildWorkflowCall, ChildWorkflowOutcome, WorkflowToolCaller } from '../apps/types';
import { chainRefusal, type RunParentLink } from '../domain/run-lineage';
import { mayDependOn } from '../domain/spaces';
import { resolveInput } from '../domain/workflow';
import { ApiError } from '../errors';
import type { WorkflowRunState } from '../runtime/workflow-executor';
import type { ServiceContext } from './context';
import { workflowRun } from './run-builders';
import { untilInactive } from './run-waits';
import { acceptRun, agentsOfSteps, refusalMessage } from './runs';

/** How often a workflow tool call waiting for its run looks whether its own run was asked to stop. */
const STOP_CHECK_MS = 250;

const failed = (error: string, childRunId: string | null = null): ChildWorkflowOutcome => ({ ok: false, error, childRunId });

/** Starts the child run of a workflow tool call and waits for it (at most `waitMs`). */
export async function callWorkflowTool(
  ctx: ServiceContext,
  caller: WorkflowToolCaller,
  call: ChildWorkflowCall,
  waitMs: number,
): Promise<ChildWorkflowOutcome> {
  const { slug } = call;
  const record = await ctx.store.workflows.find(caller.workspaceId, slug);
  if (!record || !mayDependOn(caller.team, record.document.space.team)) {
    return failed(`workflow '${slug}' no longer exists where this agent can reach it (deleted, or moved to another team's space)`);
  }
  if (!record.document.enabled) return failed(`workflow '${slug}' is disabled; it runs again once its enabled is set to true`);
  const refusal = chainRefusal(caller.position, record.slug);
  if (refusal) return failed(refusal);
  const resolved = resolveInput(record.document, call.args);
  if (resolved.problems.length) return failed(resolved.problems.map((p) => `${p.path.replace(/^body\.input/, 'args')}: ${p.message}`).join('; '));
  let stepAgents: Awaited<ReturnType<typeof agentsOfSteps>>;
  try {
    stepAgents = await agentsOfSteps(ctx, caller.workspaceId, record.document);
  } catch (err) {
    if (err instanceof ApiError) return failed(err.message);
    throw err;
  }
  const parent: RunParentLink = {
    run_id: caller.runId,
    kind: caller.kind,
    tool_call_id: call.callId,
    depth: caller.position.depth + 1,
    workflows: [...caller.position.workflows],
  };
  const run = workflowRun(record, resolved.input, stepAgents, { workspaceId: caller.workspaceId, startedBy: caller.startedBy, source: 'tool' });
  const { id, outcome } = await acceptRun(
    ctx,
    { ...run, request: { input: resolved.input, parent, event_chain: caller.eventChain }, parent: { runId: caller.runId }, visibleTo: caller.visibleTo },
    ctx.lendRunWorker() ?? ctx.reserveRunWorker(),
  );
  call.started(id);
  if (outcome.status === 'refused') return failed(`workflow '${slug}' was refused: ${refusalMessage(run.minimumCost, outcome.balance)}`, id);
  await waitForChild(ctx, caller.runId, id, waitMs, call.shouldStop);
  return childOutcome(ctx, slug, id, waitMs, call.shouldStop());
}

/** Waits for the child run to end, at most `waitMs`; a stop asked of the calling run cancels the child. */
async function waitForChild(ctx: ServiceContext, parentId: string, childId: string, waitMs: number, shouldStop: () => boolean): Promise<void> {
  const stopWatch = new AbortController();
  const watcher = setInterval(() => shouldStop() && stopWatch.abort(), STOP_CHECK_MS);
  try {
    await untilInactive(ctx, childId, waitMs, stopWatch.signal);
  } finally {
    clearInterval(watcher);
  }
  // The cancel of the calling run reached its children where it was asked (cancelChildren); this
  // covers a child accepted after that, by a call in flight.
  if (shouldStop()) await cancelChildren(ctx, [childId], `run:${parentId}`);
}

/** What the call answers once its wait ended: the child's output or error, or that it goes on. */
async function childOutcome(ctx: ServiceContext, slug: string, id: string, waitMs: number, stopped: boolean): Promise<ChildWorkflowOutcome> {
  const row = await ctx.store.runs.find(id);
  if (!row) return failed(`workflow '${slug}': its run ${id} is gone`, id);
  if (row.status === 'succeeded') {
    const state = JSON.parse(row.state) as WorkflowRunState;
    return { ok: true, childRunId: id, output: { run_id: id, status: 'succeeded', output: state.output } };
  }
  if (row.status === 'failed' || row.status === 'refused') return failed(`workflow '${slug}' ${row.status} (run ${id}): ${row.error}`, id);
  if (row.status === 'cancelled' || stopped) return failed(`workflow '${slug}' was cancelled (run ${id})`, id);
  const note = `still ${row.status} after ${waitMs / 1000} s: read GET /api/build/workflow-runs/${id} for its end`;
  return { ok: true, childRunId: id, output: { run_id: id, status: row.status, output: null, note } };
}

/**
 * Cancels runs started by tool calls, and the runs they started in turn (a chain is at most
 * MAX_TOOL_DEPTH deep): queued ones at once, running ones asked to stop. `by` is recorded as who
 * cancelled them.
 */
export async function cancelChildren(ctx: ServiceContext, ids: readonly string[], by: string): Promise<void> {
  for (const id of ids) {
    await ctx.store.runs.cancel(id, by, new Date().toISOString());
    void ctx.requestRunStop(id);
    await cancelChildren(ctx, await ctx.store.runs.activeChildren(id), by);
  }
}
