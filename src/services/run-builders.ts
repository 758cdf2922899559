// The one place a run of an agent or of a workflow is put together, whatever starts it (a test, a
// webhook delivery, a schedule, a poll): what it runs (the stored version), what it reserves, and
// the state it starts from. The starters say only who started it, why, and with what request.
import type { Agent, Workflow } from '../domain/types';
import { initialAgentState } from '../runtime/agent-loop';
import { initialWorkflowState } from '../runtime/workflow-executor';
import type { DocumentRecord, NewRun } from '../store/port';

/** A run to accept; `snapshot` is the stored version of the document that runs, `stepAgents` a workflow's agents as stored now. */
export type RunToAccept = Omit<NewRun, 'initialCredits' | 'id' | 'snapshotJson' | 'stepAgentsJson'> & {
  snapshot: Pick<DocumentRecord<unknown>, 'json' | 'document'>;
  stepAgents?: Record<string, Agent>;
};

/** Who or what started a run, and the starter's own bookkeeping (a trigger, a due time, a delivery id, a rate). */
export type RunOrigin = Pick<RunToAccept, 'workspaceId' | 'startedBy' | 'source' | 'triggerId' | 'fire' | 'delivery' | 'rate'>;

/** An agent run's request: the prompt, and whatever its starter adds (a delivery's input, a schedule's due time). */
export type AgentRunRequest = { prompt: string } & Record<string, unknown>;

type Stored<T> = Pick<DocumentRecord<T>, 'id' | 'slug' | 'version' | 'json' | 'document'>;

/** A run of the stored `agent`: its first model step reserved (1 credit), from an empty transcript. */
export function agentRun(agent: Stored<Agent>, request: AgentRunRequest, origin: RunOrigin): RunToAccept {
  return {
    ...origin,
    kind: 'agent',
    targetId: agent.id,
    targetVersion: agent.version,
    team: agent.document.space.team,
    request,
    snapshot: agent,
    agent: { slug: agent.slug, name: agent.document.name },
    state: initialAgentState(),
    minimumCost: 1,
  };
}

/**
 * A run of the stored `workflow` with its resolved `input`: every step reserved (1 credit each), and
 * `stepAgents`, the agents its agent steps run as stored now (agentsOfSteps).
 */
export function workflowRun(
  workflow: Stored<Workflow>,
  input: Record<string, unknown>,
  stepAgents: Record<string, Agent> | undefined,
  origin: RunOrigin,
): RunToAccept {
  return {
    ...origin,
    kind: 'workflow',
    targetId: workflow.id,
    targetVersion: workflow.version,
    team: workflow.document.space?.team ?? null,
    request: { input },
    snapshot: workflow,
    stepAgents,
    state: initialWorkflowState(workflow.document),
    minimumCost: workflow.document.steps.length,
  };
}
