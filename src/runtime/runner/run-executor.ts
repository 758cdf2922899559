// Executes one claimed run to its end: an agent run through the agent loop, a workflow run through
// the workflow executor, each paying its steps and saving its progress through its credit ledger.
// A run that throws is recorded as failed (the worker goes on). A run asked to stop (a cancel: in
// memory when it executes here, or seen in its row at its next progress save when the cancel
// reached another process) stops before its next step and ends cancelled. An agent run whose tool
// calls the approval policy held is parked in its row; deciding the calls queues it again, and a
// worker resumes it from its stored state.
import type { Agent, Workflow } from '../../domain/types';
import type { Logger } from '../../log';
import type { Metrics } from '../../metrics';
import type { KvRepository } from '../../store/port';
import { runAgent, type AgentRunState } from '../agent-loop';
import { renderBudget, type RunLimits } from '../limits';
import type { ModelRegistry } from '../models';
import type { AppRegistry } from '../../apps/registry';
import type { ChannelSends, ChildWorkflows, HttpToolOptions, ToolContext, WorkflowToolCaller } from '../../apps/types';
import { positionOf, type RunParentLink } from '../../domain/run-lineage';
import { runWorkflow, type StepOutcome } from '../workflow-executor';
import { createCreditLedger, type CreditLedger, type LedgerOptions } from './credit-ledger';
import type { ExecutingRuns } from './executing-runs';
import type { QueuedRun } from './queued-run';
import { inRunSpan } from '../../tracing';

export interface RunExecutorOptions {
  runs: LedgerOptions['runs'];
  kv: KvRepository;
  models: ModelRegistry;
  /** Which apps (and tools) each workspace has. */
  apps: AppRegistry;
  http: HttpToolOptions;
  /** What one run may render, hold, return and wait for. */
  limits: RunLimits;
  /** The runs executing here: each run is listed there while it executes. */
  executing: ExecutingRuns;
  logger: Logger;
  approvalTimeoutMs?: number;
  metrics: Metrics;
  /** Starts the child run of a workflow tool call and waits for it; without it, workflow tools fail saying so. */
  childWorkflows?: ChildWorkflows;
  /** Queues what an agent's channel tools send (services/channel-outbox.ts). */
  channelSends?: ChannelSends;
}

/** How many app events led to the run (services/app-events.ts): its request says, when one did. */
const eventChainOf = (run: QueuedRun): number => {
  const chain = (run.request as { event_chain?: unknown } | null)?.event_chain;
  return typeof chain === 'number' ? chain : 0;
};

/** Executes a claimed run and records its end (or its parking); never rejects for the run's own failure. */
export type RunExecutor = (run: QueuedRun) => Promise<void>;

// Long because both kinds of run share the options, the tool context and the ledger it closes over.
export function createRunExecutor(opts: RunExecutorOptions): RunExecutor {
  const { logger } = opts;

  /** What a run's tool calls get: one rendering budget for the whole run (its agent steps included). */
  const toolContext = (run: QueuedRun): ToolContext => ({
    workspaceId: run.workspaceId,
    kv: opts.kv,
    http: opts.http,
    limits: opts.limits,
    budget: renderBudget(opts.limits),
    eventChain: eventChainOf(run),
  });

  /** The calls of `agent`'s workflow tools in `run` start child runs of it (as its agent, in its chain). */
  const callerOf = (run: QueuedRun, agent: Agent): WorkflowToolCaller => {
    const { parent } = (run.request ?? {}) as { parent?: RunParentLink };
    return {
      runId: run.id,
      kind: run.kind,
      workspaceId: run.workspaceId,
      startedBy: run.startedBy,
      // A test's chain is its starter's alone, as the test is.
      visibleTo: run.visibleTo ?? (run.source === 'test' ? run.startedBy : null),
      team: agent.space.team,
      position: positionOf(run.kind, (run.snapshot as { slug: string }).slug, parent),
      eventChain: eventChainOf(run),
    };
  };

  /** The tool context and own tools of `agent` running in `run`. */
  async function agentSetting(run: QueuedRun, agent: Agent, tools: ToolContext) {
    const { childWorkflows, channelSends } = opts;
    const caller = callerOf(run, agent);
    // The message that started the run, which the agent's channel tools answer (none for a workflow's agent step).
    const origin = run.kind === 'agent' ? ((run.request as { channel_message?: unknown } | null)?.channel_message ?? null) : null;
    return {
      agentTools: await opts.apps.agentTools(run.workspaceId, agent),
      tools: {
        ...tools,
        ...(childWorkflows && { runWorkflow: (call: Parameters<NonNullable<ToolContext['runWorkflow']>>[0]) => childWorkflows(caller, call) }),
        ...(channelSends && {
          sendOnChannel: (call: Parameters<NonNullable<ToolContext['sendOnChannel']>>[0]) =>
            channelSends({ runId: run.id, workspaceId: run.workspaceId, agent, origin }, call),
        }),
      },
    };
  }

  async function executeAgentRun(run: QueuedRun, account: CreditLedger): Promise<string> {
    const agent = run.snapshot as Agent;
    const { prompt } = run.request as { prompt: string };
    const outcome = await runAgent(
      agent,
      prompt,
      {
        models: opts.models,
        apps: await opts.apps.of(run.workspaceId),
        ...(await agentSetting(run, agent, toolContext(run))),
        // The first step was reserved when the run was accepted; later ones are paid as they come.
        chargeStep: account.charge,
        onProgress: account.progress as (state: AgentRunState) => Promise<void>,
        shouldStop: account.shouldStop,
        emit: account.emit,
      },
      run.state as AgentRunState, // a parked run's state resumes where it stopped; a new run's is empty
    );
    if (outcome.status === 'awaiting_approval') await account.park(outcome);
    else await account.finish(outcome);
    return outcome.status;
  }

  async function executeWorkflowRun(run: QueuedRun, account: CreditLedger): Promise<string> {
    const workflow = run.snapshot as Workflow;
    const { input } = run.request as { input: Record<string, unknown> };
    const tools = toolContext(run);
    const apps = await opts.apps.of(run.workspaceId);
    const runAgentStep = async (slug: string, prompt: string): Promise<StepOutcome> => {
      // The agent as it was stored when the run was accepted (checked then: it exists and is not archived).
      const agent = run.stepAgents && Object.hasOwn(run.stepAgents, slug) ? run.stepAgents[slug] : undefined;
      if (!agent) return { ok: false, error: `agent '${slug}' was not recorded when the run was accepted` };
      // The workflow step is the unit of cost: the agent's own model steps are not charged again.
      const outcome = await runAgent(agent, prompt, {
        models: opts.models,
        apps,
        ...(await agentSetting(run, agent, tools)),
        chargeStep: async () => true,
        onProgress: async () => undefined,
        shouldStop: account.shouldStop,
        canWaitForApproval: false,
      });
      if (outcome.status === 'succeeded') return { ok: true, output: outcome.state.final_text };
      return { ok: false, error: outcome.status === 'cancelled' ? 'cancelled' : (outcome.error as string) };
    };
    const outcome = await runWorkflow(workflow, input, {
      apps,
      tools,
      runAgentStep,
      chargeStep: account.charge,
      onProgress: account.progress,
      shouldStop: account.shouldStop,
      emit: account.emit,
    });
    await account.finish(outcome);
    return outcome.status;
  }

  return async function execute(run: QueuedRun): Promise<void> {
    const account = createCreditLedger(run, { runs: opts.runs, logger, approvalTimeoutMs: opts.approvalTimeoutMs });
    const started = performance.now();
    // A run that spent nothing has not executed before: its wait since acceptance is its queue wait
    // (a run resumed after an approval was waited for by its caller, not by the queue).
    opts.metrics.runStarted(run.kind, run.source, run.creditsSpent === 0 ? (Date.now() - Date.parse(run.acceptedAt)) / 1000 : null);
    let status = 'failed';
    await opts.executing.track(run.id, account.stop, async () => {
      try {
        status = await inRunSpan(`${run.kind} run`, run.traceParent, runAttributes(run), () =>
          run.kind === 'agent' ? executeAgentRun(run, account) : executeWorkflowRun(run, account),
        );
      } catch (err) {
        logger.error({ err, runId: run.id }, 'run failed unexpectedly');
        await account.finish({ status: 'failed', error: 'internal error while executing the run', state: run.state }).catch((e: unknown) => {
          logger.error({ err: e, runId: run.id }, 'could not record the failure of a run');
        });
      }
    });
    opts.metrics.runFinished(run.kind, run.source, status, (performance.now() - started) / 1000);
  };
}

/** What a run's span says of it (its ids are trace data, never metric labels). */
const runAttributes = (run: QueuedRun) => ({
  'build.run.id': run.id,
  'build.run.kind': run.kind,
  'build.run.source': run.source,
  'build.workspace.id': run.workspaceId,
});
