// The agent loop: the model is asked, its tool calls are checked against the agent's tool access
// and approval policy and executed, their results go back to the model, until it answers with text
// or max_steps model steps are spent. Every step is charged before it is taken.
//
// A call the approval policy holds parks the run: the loop returns `awaiting_approval` with the
// state so far (the whole conversation is in the transcript), and a later worker resumes from that
// state once every held call is decided: approved calls execute, rejected ones are reported to the
// model as rejected, and the loop goes on. A stop asked for (a cancel) is honoured before each
// model call and each tool call; a call already in flight finishes and is recorded.
// The state (transcript and tool calls) may not grow past the run's limit, nor the final text past
// its output limit (runtime/limits.ts): either fails the run, naming the limit.
import type { ToolDefinition } from '../domain/catalog';
import type { Agent } from '../domain/types';
import type { components } from '../../generated/api';
import { limitErrors, StateMeter } from './limits';
import { appToolsOf, CONNECTION_ARGUMENT, NO_AGENT_TOOLS, WORKFLOWS_APP, type AgentTools, type WorkspaceApps } from '../apps/registry';
import type { LoadedSkill, ToolContext } from '../apps/types';
import { ModelError, type ChatMessage, type ModelReply, type ToolCall, type ToolSpec } from './models/provider';
import type { ModelRegistry } from './models';
import { inSpan } from '../tracing';

type TranscriptMessage = components['schemas']['TranscriptMessage'];
type ToolCallRecord = components['schemas']['ToolCallRecord'];

export interface AgentRunState {
  transcript: TranscriptMessage[];
  tool_calls: ToolCallRecord[];
  final_text: string | null;
  steps: number;
  /** The skills the run loaded, each version once (absent until one is). */
  skills_loaded?: LoadedSkill[];
}

/** The state of an agent run that has not started: what its projection shows while it is queued. */
export function initialAgentState(): AgentRunState {
  return { transcript: [], tool_calls: [], final_text: null, steps: 0 };
}

export interface AgentLoopDeps {
  models: ModelRegistry;
  /** The apps of the run's workspace: the agent's tools are theirs. */
  apps: WorkspaceApps;
  /** The agent's own tools (its workflows, its skill loaders) and its skills' list for the system prompt; none when absent. */
  agentTools?: AgentTools;
  tools: ToolContext;
  /** Pays for one model step; false when the workspace cannot. */
  chargeStep: () => Promise<boolean>;
  /** Called after every step with the state so far (the projection shows progress). */
  onProgress: (state: AgentRunState) => Promise<void>;
  /** Whether the run was asked to stop (checked before each model call and each tool call). */
  shouldStop?: () => boolean;
  /** Reports a state change (a step or tool call started or finished) to the run's event stream. */
  emit?: (type: string, data: Record<string, unknown>) => void;
  /**
   * Whether a held call may park the run. A workflow's agent step cannot wait: its held calls are
   * refused and the model is told so.
   */
  canWaitForApproval?: boolean;
}

export type AgentOutcome =
  | { status: 'succeeded' | 'failed' | 'cancelled'; error: string | null; state: AgentRunState }
  /** Parked: `held` are the calls that wait for a decision (in `state.tool_calls` too). */
  | { status: 'awaiting_approval'; error: null; state: AgentRunState; held: { id: string; tool: string }[] };

/** The tools the agent may call: those of its apps (of the workspace's: `apps`), minus its disabled tools, and its own. */
export function toolsOf(agent: Agent, apps: WorkspaceApps, own: AgentTools = NO_AGENT_TOOLS): Map<string, ToolDefinition> {
  const allowed = appToolsOf(agent, apps);
  for (const [slug, tool] of own.tools) allowed.set(slug, tool);
  return allowed;
}

/**
 * The schema the model is given for `tool`: its arguments, and for an app whose calls go through a
 * connection, `connection` (required, one of the refs) when the agent may use several, and left
 * out when it may use one or none (that one is used; none fails the call, saying why).
 */
function modelSchema(agent: Agent, tool: ToolDefinition, apps: WorkspaceApps): Record<string, unknown> {
  const app = tool.slug.slice(0, tool.slug.indexOf('.'));
  if (!apps.needsConnection(app)) return tool.args_schema;
  const allowed = agent.tools.connections;
  const usable = (apps.connections.get(app) ?? []).filter((ref) => allowed === 'all' || allowed.includes(ref));
  const { [CONNECTION_ARGUMENT]: _own, ...properties } = (tool.args_schema.properties ?? {}) as Record<string, unknown>;
  if (usable.length < 2) return { ...tool.args_schema, properties };
  const required = [...((tool.args_schema.required as string[] | undefined) ?? []), CONNECTION_ARGUMENT];
  const connection = { type: 'string', enum: usable, description: `The connection of app '${app}' the call goes through.` };
  return { ...tool.args_schema, properties: { ...properties, [CONNECTION_ARGUMENT]: connection }, required };
}

/** `write` holds every call that is not read-only; `destructive` holds destructive calls. */
export function needsApproval(policy: Agent['tools']['approval'], tool: ToolDefinition): boolean {
  return policy === 'write' ? !tool.read_only || tool.destructive : tool.destructive;
}

const NO_WAIT_IN_WORKFLOW = 'held by the approval policy: an agent step of a workflow cannot wait for approval, so the call was not executed';

/** Why the agent may not call `slug`, which is not among its tools. */
function unavailable(slug: string, apps: WorkspaceApps, own: AgentTools): string {
  const refusal = own.refused.get(slug);
  if (refusal) return refusal;
  if (slug.startsWith(`${WORKFLOWS_APP}.`)) return `${slug} is not a workflow this agent lists in its workflows`;
  return `${slug} ${apps.tools.has(slug) ? 'is not available to this agent (not in tools.apps, or disabled)' : 'is not a tool of the catalog'}`;
}

/** Checks a call against the agent's tools and policy: refused, held (for approval), or to execute. */
function admit(agent: Agent, allowed: Map<string, ToolDefinition>, deps: AgentLoopDeps, call: ToolCall): ToolCallRecord {
  const record: ToolCallRecord = { id: call.id, tool: call.tool, args: call.args, status: 'succeeded', output: null, error: null };
  const tool = allowed.get(call.tool);
  if (!tool) return { ...record, status: 'refused', error: unavailable(call.tool, deps.apps, deps.agentTools ?? NO_AGENT_TOOLS) };
  const canWait = deps.canWaitForApproval ?? true;
  if (!needsApproval(agent.tools.approval, tool)) return record;
  if (!canWait) return { ...record, status: 'refused', error: NO_WAIT_IN_WORKFLOW };
  return { ...record, status: 'awaiting_approval', approval: { decision: null, note: null, decided_by: null, decided_at: null } };
}

/** Executes an admitted (or approved) call and records its outcome on `record`. */
async function execute(agent: Agent, record: ToolCallRecord, deps: AgentLoopDeps, state: AgentRunState): Promise<void> {
  deps.emit?.('tool_call.started', { call_id: record.id, tool: record.tool });
  // The connections the agent may use (tools.connections); the record says which one a call went
  // through, and which run it started (a workflow tool).
  const ctx: ToolContext = {
    ...deps.tools,
    connections: { allowed: agent.tools.connections },
    usedConnection: (ref: string) => (record.connection = ref),
    callId: record.id,
    startedRun: (runId: string) => (record.child_run_id = runId),
    shouldStop: () => deps.shouldStop?.() ?? false,
    loadedSkill: (skill) => recordLoaded(state, skill),
  };
  const own = deps.agentTools;
  const outcome = own?.tools.has(record.tool) ? await own.invoke(record.tool, record.args, ctx) : await deps.apps.invoke(record.tool, record.args, ctx);
  if (outcome.ok) Object.assign(record, { status: 'succeeded', output: outcome.output, error: null });
  else Object.assign(record, { status: 'failed', error: outcome.error });
  deps.emit?.('tool_call.finished', { call_id: record.id, tool: record.tool, status: record.status, error: record.error });
}

/** Records a skill the run loaded (each version once). */
function recordLoaded(state: AgentRunState, skill: LoadedSkill): void {
  const loaded = (state.skills_loaded ??= []);
  if (!loaded.some((s) => s.name === skill.name && s.source === skill.source && s.version === skill.version)) loaded.push(skill);
}

function toolMessageContent(record: ToolCallRecord): string {
  if (record.status === 'succeeded') return JSON.stringify(record.output);
  if (record.status === 'rejected') return `rejected by a reviewer; the call was not executed${record.approval?.note ? `. Note: ${record.approval.note}` : ''}`;
  return `error: ${record.error}`;
}

/** The conversation so far, as the model is given it: the instructions (and the skills' list), then the run's transcript. */
function conversation(agent: Agent, transcript: TranscriptMessage[], skills: string | null): ChatMessage[] {
  const system = [agent.instructions, skills].filter(Boolean).join('\n\n');
  const messages: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
  for (const m of transcript) {
    if (m.role === 'user') messages.push({ role: 'user', content: m.content ?? '' });
    else if (m.role === 'tool') messages.push({ role: 'tool', tool_call_id: m.tool_call_id as string, content: m.content ?? '' });
    else messages.push({ role: 'assistant', content: m.content, ...(m.tool_calls?.length && { tool_calls: m.tool_calls }) });
  }
  return messages;
}

/**
 * Resuming a parked run: the decided calls of the step that parked it are executed (approved) or
 * recorded as rejected, then answered. Why the run cannot go on (a stop, or a state past its
 * limit), or null.
 */
async function settleDecidedCalls(
  agent: Agent,
  state: AgentRunState,
  deps: AgentLoopDeps,
  answer: (record: ToolCallRecord) => boolean,
  stopping: () => boolean,
): Promise<'cancelled' | 'too_large' | null> {
  for (const record of state.tool_calls) {
    if (record.status !== 'awaiting_approval' || !record.approval?.decision) continue;
    if (stopping()) return 'cancelled';
    if (record.approval.decision === 'approve') await execute(agent, record, deps, state);
    else {
      record.status = 'rejected';
      record.error = `rejected by ${record.approval.decided_by}${record.approval.note ? `: ${record.approval.note}` : ''}`;
      deps.emit?.('tool_call.finished', { call_id: record.id, tool: record.tool, status: 'rejected', error: record.error });
    }
    if (!answer(record)) return 'too_large';
  }
  return null;
}

/** Adds the model's reply to the conversation and the transcript; false when the run's state cannot hold it. */
function recordReply(reply: ModelReply, messages: ChatMessage[], state: AgentRunState, stateSize: StateMeter): boolean {
  // The reply is in the transcript once and in the tool call records once.
  if (!stateSize.add(reply.text) || !stateSize.add(reply.toolCalls) || !stateSize.add(reply.toolCalls)) return false;
  messages.push({ role: 'assistant', content: reply.text, ...(reply.toolCalls.length && { tool_calls: reply.toolCalls }) });
  state.transcript.push({
    role: 'assistant',
    content: reply.text,
    ...(reply.toolCalls.length && { tool_calls: reply.toolCalls.map((c) => ({ id: c.id, tool: c.tool, args: c.args })) }),
  });
  return true;
}

/**
 * Runs the agent on `prompt`, or goes on from `resumeFrom` (a parked run's state whose held calls
 * are all decided).
 */
export async function runAgent(agent: Agent, prompt: string, deps: AgentLoopDeps, resumeFrom?: AgentRunState): Promise<AgentOutcome> {
  const resuming = resumeFrom !== undefined && resumeFrom.transcript.length > 0;
  const state: AgentRunState = resuming ? resumeFrom : { transcript: [{ role: 'user', content: prompt }], tool_calls: [], final_text: null, steps: 0 };
  const fail = (error: string): AgentOutcome => ({ status: 'failed', error, state });
  const cancelled = (): AgentOutcome => ({ status: 'cancelled', error: null, state });
  const stopping = () => deps.shouldStop?.() ?? false;
  const provider = deps.models.providerFor(agent.model);
  if (!provider) return fail(`model '${agent.model}' is not offered by any configured provider`);
  const allowed = toolsOf(agent, deps.apps, deps.agentTools);
  const tools: ToolSpec[] = [...allowed.values()].map((t) => ({ slug: t.slug, description: t.description, parameters: modelSchema(agent, t, deps.apps) }));
  const messages = conversation(agent, state.transcript, deps.agentTools?.instructions ?? null);
  const { limits } = deps.tools;
  const stateSize = new StateMeter(limits.stateBytes, state);
  const tooLarge = () => fail(limitErrors.state(limits));
  /** Answers a call to the model; false when the state cannot hold the answer (and the call's output). */
  const answer = (record: ToolCallRecord): boolean => {
    const content = toolMessageContent(record);
    if (!stateSize.add(record.output) || !stateSize.add(content)) return false;
    messages.push({ role: 'tool', tool_call_id: record.id, content });
    state.transcript.push({ role: 'tool', tool_call_id: record.id, content });
    return true;
  };

  if (resuming) {
    const interrupted = await settleDecidedCalls(agent, state, deps, answer, stopping);
    if (interrupted === 'cancelled') return cancelled();
    if (interrupted === 'too_large') return tooLarge();
    await deps.onProgress(state);
  }

  for (let step = state.steps + 1; step <= agent.max_steps; step++) {
    if (stopping()) return cancelled();
    if (!(await deps.chargeStep())) return fail(`credits exhausted after ${state.steps} model step${state.steps === 1 ? '' : 's'}`);
    deps.emit?.('step.started', { step });
    let reply: ModelReply;
    try {
      // A model call's span, as OpenTelemetry's GenAI conventions name it.
      reply = await inSpan(`chat ${agent.model}`, { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': agent.model }, () =>
        provider.complete({ model: agent.model, messages, tools, reasoningEffort: agent.reasoning_effort ?? null }),
      );
    } catch (err) {
      if (err instanceof ModelError) return fail(err.message);
      throw err;
    }
    state.steps = step;
    deps.emit?.('step.finished', { step, tool_calls: reply.toolCalls.length });
    if (!recordReply(reply, messages, state, stateSize)) return tooLarge();
    if (!reply.toolCalls.length) {
      if (Buffer.byteLength(reply.text ?? '') > limits.outputBytes) return fail(limitErrors.output(limits));
      state.final_text = reply.text ?? '';
      await deps.onProgress(state);
      return { status: 'succeeded', error: null, state };
    }
    const held: { id: string; tool: string }[] = [];
    for (const call of reply.toolCalls) {
      if (stopping()) return cancelled();
      const record = admit(agent, allowed, deps, call);
      state.tool_calls.push(record);
      if (record.status === 'awaiting_approval') {
        held.push({ id: record.id, tool: record.tool }); // answered once decided
        continue;
      }
      if (record.status === 'succeeded') await execute(agent, record, deps, state);
      if (!answer(record)) return tooLarge();
    }
    if (held.length) return { status: 'awaiting_approval', error: null, state, held };
    await deps.onProgress(state);
  }
  return fail(`stopped after max_steps (${agent.max_steps}) model steps without a final answer`);
}
