// Runs: accepting them (credits reserved, or the refusal recorded as a run that can be read), and
// their projections. A test run is visible only to the user who started it; a run a trigger or a
// schedule started, to every member of its workspace (with Build authorization, as every caller has).
import type { components } from '../../generated/api';
import { resolveInput } from '../domain/workflow';
import type { Agent, Workflow } from '../domain/types';
import { ApiError, notFound } from '../errors';
import { uuidV7 } from '../ids';
import { activeTraceparent } from '../tracing';
import type { AcceptOutcome, RunRow } from '../store/port';
import type { AgentRunState } from '../runtime/agent-loop';
import type { WorkflowRunState } from '../runtime/workflow-executor';
import type { QueuedRun } from '../runtime/runner';
import { findAgent } from './agents';
import type { Principal, ServiceContext } from './context';
import { mayDependOn, sees } from '../domain/spaces';
import type { RunParentLink } from '../domain/run-lineage';
import { rejectProblems } from './references';
import { agentRun, workflowRun, type RunToAccept } from './run-builders';
import { findWorkflow } from './workflows';
import { runnableVersion } from './versions';

type AgentRun = components['schemas']['AgentRun'];
type WorkflowRun = components['schemas']['WorkflowRun'];
type Accepted = { accepted: true; run_id: string; status: 'queued' };

export const AGENT_RUN_WARNING =
  'Transcript and tool output can contain instructions from third parties; review them before copying anything into an agent or workflow.';
export const WORKFLOW_RUN_WARNING = 'Step output can contain instructions from third parties; review it before copying anything into an agent or workflow.';

/** A run refused (409): `run_id` names the run row that recorded the refusal, or is null when none was. */
export const refused = (error: string, runId: string | null) => new ApiError(409, error, { run_id: runId });

export const refusalMessage = (minimumCost: number, balance: number) =>
  `insufficient credits: the run needs at least ${minimumCost}, the workspace has ${balance}`;

/**
 * Records the run (queued with its minimum cost reserved, or refused) in one write and hands a
 * queued one to the workers: when a worker here is free, the write claims the run for it, which
 * executes it at once; otherwise the run goes to the workers' queue. Returns its id and the store's
 * outcome (a repeated webhook delivery writes nothing and names the first delivery's run instead).
 * `worker` is the one the write may claim the run for: a free one here by default; a run that will
 * wait for this one lends its own (ServiceContext.lendRunWorker). `id`: the run's, when the starter
 * chose it first (an eval records it before the run exists: a second acceptance under it fails).
 */
export async function acceptRun(
  ctx: ServiceContext,
  run: RunToAccept,
  worker = ctx.reserveRunWorker(),
  // time-ordered: a new run's key is appended to the runs' index, not put on a random page of it
  id = uuidV7(),
): Promise<{ id: string; outcome: AcceptOutcome }> {
  const acceptedAt = new Date().toISOString();
  const traceParent = activeTraceparent(); // the run's span continues the trace that queued it
  const { snapshot, stepAgents, ...row } = run;
  const stepAgentsJson = stepAgents && JSON.stringify(stepAgents);
  const claim = worker ? { lease: worker.lease, cap: worker.cap } : undefined;
  const outcome = await ctx.store.runs
    .accept({ ...row, id, snapshotJson: snapshot.json, stepAgentsJson, initialCredits: ctx.defaultCredits, traceParent, claim }, (balance) =>
      refusalMessage(run.minimumCost, balance),
    )
    .catch((err: unknown) => {
      worker?.release();
      // It may have committed without reaching the disk (a failed fsync): the workers look in the table.
      ctx.notifyRunQueued();
      throw err;
    });
  if (outcome.status === 'queued' || outcome.status === 'refused') ctx.metrics.runAccepted(run.kind, run.source, outcome.status);
  if (outcome.status === 'queued' && outcome.claimed && worker) {
    worker.execute(queuedRun(id, run, acceptedAt, traceParent));
    return { id, outcome };
  }
  worker?.release();
  if (outcome.status === 'queued') ctx.notifyRunQueued(queuedRun(id, run, acceptedAt, traceParent));
  return { id, outcome };
}

/** A run just accepted, as the workers execute it (its documents as the acceptance parsed them). */
const queuedRun = (id: string, run: RunToAccept, acceptedAt: string, traceParent: string | null): QueuedRun => ({
  id,
  kind: run.kind,
  workspaceId: run.workspaceId,
  snapshot: run.snapshot.document,
  ...(run.stepAgents && { stepAgents: run.stepAgents }),
  request: run.request,
  state: run.state,
  startedBy: run.startedBy,
  visibleTo: run.visibleTo ?? null,
  creditsReserved: run.minimumCost,
  creditsSpent: 0,
  source: run.source,
  acceptedAt,
  traceParent,
});

async function accept(ctx: ServiceContext, run: RunToAccept): Promise<Accepted> {
  const { id, outcome } = await acceptRun(ctx, run);
  if (outcome.status === 'refused') throw refused(refusalMessage(run.minimumCost, outcome.balance), id);
  return { accepted: true, run_id: id, status: 'queued' };
}

/**
 * A test run of the agent: of its current version, or of kept `version` (whose content runs; the
 * current version says whether the agent may run).
 */
export async function testAgent(ctx: ServiceContext, who: Principal, ref: string, prompt: string, version?: string | number): Promise<Accepted> {
  const agent = await findAgent(ctx, who, ref);
  if (agent.document.status === 'archived') {
    throw refused(`agent '${agent.slug}' is archived; set its status to draft or active to test it`, null);
  }
  const runs = version === undefined ? agent : await runnableVersion({ noun: 'agent', versions: ctx.store.agents.versions }, agent, version);
  return accept(ctx, agentRun(runs, { prompt }, { workspaceId: who.workspaceId, startedBy: who.userId, source: 'test' }));
}

/** A test run of the workflow: of its current version, or of kept `version` (as testAgent). */
export async function testWorkflow(
  ctx: ServiceContext,
  who: Principal,
  ref: string,
  input: Record<string, unknown>,
  version?: string | number,
): Promise<Accepted> {
  const workflow = await findWorkflow(ctx, who, ref);
  const runs = version === undefined ? workflow : await runnableVersion({ noun: 'workflow', versions: ctx.store.workflows.versions }, workflow, version);
  const resolved = resolveInput(runs.document, input);
  rejectProblems(resolved.problems);
  if (!workflow.document.enabled) {
    throw refused(`workflow '${workflow.slug}' is disabled; set enabled to true to test it`, null);
  }
  const stepAgents = await agentsOfSteps(ctx, who.workspaceId, runs.document);
  return accept(ctx, workflowRun(runs, resolved.input, stepAgents, { workspaceId: who.workspaceId, startedBy: who.userId, source: 'test' }));
}

/**
 * The agents a workflow's agent steps run, as stored now: the run executes these versions, whatever
 * is written later. An archived agent (or one gone) refuses the run, naming the step.
 */
export async function agentsOfSteps(ctx: ServiceContext, workspaceId: string, workflow: Workflow): Promise<Record<string, Agent> | undefined> {
  const agents: Record<string, Agent> = {};
  for (const [i, step] of workflow.steps.entries()) {
    if (step.kind !== 'agent' || Object.hasOwn(agents, step.agent)) continue;
    const record = await ctx.store.agents.find(workspaceId, step.agent);
    const at = `steps[${i}] ('${step.id}')`;
    // An agent moved to a team's space since the workflow was written is out of a workspace workflow's reach.
    if (!record || !mayDependOn(workflow.space.team, record.document.space.team)) {
      throw refused(`${at}: agent '${step.agent}' is not an agent this workflow's space can use (the workspace's agents, and its own team's)`, null);
    }
    if (record.document.status === 'archived') {
      throw refused(`${at}: agent '${step.agent}' is archived; set its status to draft or active, or change the step, to run this workflow`, null);
    }
    agents[step.agent] = record.document;
  }
  return Object.keys(agents).length ? agents : undefined;
}

/**
 * Whether `who` may read the run: one who sees its document's space (domain/spaces.ts), and of a
 * test run only its starter; a run a trigger or schedule started, anyone of the workspace who sees
 * its space; a run a tool call started, whoever may read the first run of its chain.
 */
function canRead(run: Pick<RunRow, 'workspace_id' | 'started_by' | 'source' | 'team' | 'visible_to'>, who: Principal): boolean {
  if (run.workspace_id !== who.workspaceId || !sees(who, run.team)) return false;
  // A test's child runs (a workflow its agent called) are its starter's as the test is (visible_to).
  if (run.visible_to !== null && run.visible_to !== who.userId) return false;
  return run.source !== 'test' || run.started_by === who.userId;
}

export async function findRun(ctx: ServiceContext, who: Principal, runId: string, kind: RunRow['kind']): Promise<RunRow> {
  const run = await ctx.store.runs.find(runId.toLowerCase());
  if (!run || run.kind !== kind || !canRead(run, who)) {
    throw notFound(`run '${runId}' not found: no ${kind} run you may read has this id`);
  }
  return run;
}

export async function getAgentRun(ctx: ServiceContext, who: Principal, runId: string): Promise<AgentRun> {
  const run = await findRun(ctx, who, runId, 'agent');
  const agent = run.snapshot ? (JSON.parse(run.snapshot) as Agent) : null;
  const state = JSON.parse(run.state) as AgentRunState;
  const executed = run.started_at !== null;
  return {
    id: run.id,
    agent: agent && { slug: agent.slug, name: agent.name },
    status: run.status,
    source: run.source,
    trigger_id: run.trigger_id,
    version: run.target_version,
    steps: executed ? state.steps : null,
    transcript: state.transcript,
    final_text: state.final_text,
    tool_calls: state.tool_calls,
    skills_loaded: state.skills_loaded ?? [],
    credits: run.status === 'refused' ? null : run.credits_spent,
    error: run.error,
    started_at: run.accepted_at,
    run_started_at: run.started_at,
    finished_at: run.finished_at,
    cancelled_by: run.cancelled_by,
    cancelled_at: run.cancel_requested_at,
    approval_expires_at: run.status === 'awaiting_approval' ? run.approval_expires_at : null,
    warning: AGENT_RUN_WARNING,
  };
}

export async function getWorkflowRun(ctx: ServiceContext, who: Principal, runId: string): Promise<WorkflowRun> {
  const run = await findRun(ctx, who, runId, 'workflow');
  const state = JSON.parse(run.state) as WorkflowRunState;
  const { input, parent } = JSON.parse(run.request) as { input: Record<string, unknown>; parent?: RunParentLink };
  return {
    id: run.id,
    workflow_id: run.target_id,
    workflow_version_id: run.target_version === null ? null : `${run.target_id}@${run.target_version}`,
    status: run.status,
    source: run.source,
    trigger_id: run.trigger_id,
    parent: parent ? { run_id: parent.run_id, kind: parent.kind, tool_call_id: parent.tool_call_id, depth: parent.depth } : null,
    current_step: state.current_step,
    step_results: state.step_results,
    input,
    output: state.output,
    started_at: run.started_at,
    finished_at: run.finished_at,
    error: run.error,
    started_by: run.started_by,
    cancelled_by: run.cancelled_by,
    cancelled_at: run.cancel_requested_at,
    warning: WORKFLOW_RUN_WARNING,
  };
}
