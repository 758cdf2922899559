// The agent loop: the model is asked, its tool calls are checked against the agent's tool access
// and approval policy and executed, their results go back to the model, until it answers with text
// or max_steps model steps are spent. Every step is charged before it is taken.
import { CATALOG_APPS, CATALOG_TOOLS, type ToolDefinition } from '../domain/catalog';
import type { Agent } from '../domain/types';
import type { components } from '../../generated/api';
import { invokeTool, type ToolContext } from './tools';
import { ModelError, type ChatMessage, type ToolCall, type ToolSpec } from './models/provider';
import type { ModelRegistry } from './models';

type TranscriptMessage = components['schemas']['TranscriptMessage'];
type ToolCallRecord = components['schemas']['ToolCallRecord'];

export interface AgentRunState {
  transcript: TranscriptMessage[];
  tool_calls: ToolCallRecord[];
  final_text: string | null;
  steps: number;
}

/** The state of an agent run that has not started: what its projection shows while it is queued. */
export function initialAgentState(): AgentRunState {
  return { transcript: [], tool_calls: [], final_text: null, steps: 0 };
}

export interface AgentLoopDeps {
  models: ModelRegistry;
  tools: ToolContext;
  /** Pays for one model step; false when the workspace cannot. */
  chargeStep: () => Promise<boolean>;
  /** Called after every step with the state so far (the projection shows progress). */
  onProgress: (state: AgentRunState) => Promise<void>;
}

export interface AgentOutcome {
  status: 'succeeded' | 'failed';
  error: string | null;
  state: AgentRunState;
}

/** The tools the agent may call: those of its apps, minus its disabled tools. */
export function toolsOf(agent: Agent): Map<string, ToolDefinition> {
  const disabled = new Set(agent.tools.disabled_tools);
  const allowed = new Map<string, ToolDefinition>();
  for (const app of agent.tools.apps) {
    for (const tool of CATALOG_APPS.get(app)?.tools ?? []) if (!disabled.has(tool.slug)) allowed.set(tool.slug, tool);
  }
  return allowed;
}

/** `write` holds every call that is not read-only; `destructive` holds destructive calls. */
export function needsApproval(policy: Agent['tools']['approval'], tool: ToolDefinition): boolean {
  return policy === 'write' ? !tool.read_only || tool.destructive : tool.destructive;
}

const HELD = 'held for human approval; not executed in a test run';

async function callTool(agent: Agent, allowed: Map<string, ToolDefinition>, call: ToolCall, ctx: ToolContext): Promise<ToolCallRecord> {
  const record: ToolCallRecord = { id: call.id, tool: call.tool, args: call.args, status: 'succeeded', output: null, error: null };
  const tool = allowed.get(call.tool);
  if (!tool) {
    const reason = CATALOG_TOOLS.has(call.tool) ? 'is not available to this agent (not in tools.apps, or disabled)' : 'is not a tool of the catalog';
    return { ...record, status: 'refused', error: `${call.tool} ${reason}` };
  }
  if (needsApproval(agent.tools.approval, tool)) return { ...record, status: 'awaiting_approval' };
  const outcome = await invokeTool(call.tool, call.args, ctx);
  return outcome.ok ? { ...record, output: outcome.output } : { ...record, status: 'failed', error: outcome.error };
}

function toolMessageContent(record: ToolCallRecord): string {
  if (record.status === 'succeeded') return JSON.stringify(record.output);
  if (record.status === 'awaiting_approval') return HELD;
  return `error: ${record.error}`;
}

export async function runAgent(agent: Agent, prompt: string, deps: AgentLoopDeps): Promise<AgentOutcome> {
  const state: AgentRunState = { transcript: [{ role: 'user', content: prompt }], tool_calls: [], final_text: null, steps: 0 };
  const fail = (error: string): AgentOutcome => ({ status: 'failed', error, state });
  const provider = deps.models.providerFor(agent.model);
  if (!provider) return fail(`model '${agent.model}' is not offered by any configured provider`);
  const allowed = toolsOf(agent);
  const tools: ToolSpec[] = [...allowed.values()].map((t) => ({ slug: t.slug, description: t.description, parameters: t.args_schema }));
  const messages: ChatMessage[] = [...(agent.instructions ? [{ role: 'system' as const, content: agent.instructions }] : []), { role: 'user', content: prompt }];

  for (let step = 1; step <= agent.max_steps; step++) {
    if (!(await deps.chargeStep())) return fail(`credits exhausted after ${state.steps} model step${state.steps === 1 ? '' : 's'}`);
    let reply;
    try {
      reply = await provider.complete({ model: agent.model, messages, tools, reasoningEffort: agent.reasoning_effort ?? null });
    } catch (err) {
      if (err instanceof ModelError) return fail(err.message);
      throw err;
    }
    state.steps = step;
    messages.push({ role: 'assistant', content: reply.text, ...(reply.toolCalls.length && { tool_calls: reply.toolCalls }) });
    state.transcript.push({
      role: 'assistant',
      content: reply.text,
      ...(reply.toolCalls.length && { tool_calls: reply.toolCalls.map((c) => ({ id: c.id, tool: c.tool, args: c.args })) }),
    });
    if (!reply.toolCalls.length) {
      state.final_text = reply.text ?? '';
      await deps.onProgress(state);
      return { status: 'succeeded', error: null, state };
    }
    for (const call of reply.toolCalls) {
      const record = await callTool(agent, allowed, call, deps.tools);
      state.tool_calls.push(record);
      const content = toolMessageContent(record);
      messages.push({ role: 'tool', tool_call_id: call.id, content });
      state.transcript.push({ role: 'tool', tool_call_id: call.id, content });
    }
    await deps.onProgress(state);
  }
  return fail(`stopped after max_steps (${agent.max_steps}) model steps without a final answer`);
}
