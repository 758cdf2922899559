// builtin/scripted: a deterministic model for tests and demos. Each prompt line
// `/call <tool-slug> <json-arguments>` becomes one tool call, one model step each, in order; then it
// answers with the tools it called and their outcomes, or, when the prompt has no such line,
// repeats the prompt. It sees tool access and results only through the loop, like any model.
import { parseArguments, type ChatMessage, type ModelProvider, type ModelReply, type ModelRequest, type ToolCall } from './provider';

export const SCRIPTED_MODEL = 'builtin/scripted';

/**
 * A `/call <tool> <json>` line split into the tool and its argument text, or null. Read by hand,
 * not by a regex: a prompt is a tenant's text, and a regex for it backtracks in quadratic time on
 * long runs of whitespace.
 */
export function parseCallLine(line: string): { tool: string; argsText: string } | null {
  const text = line.trim();
  if (!text.startsWith('/call') || !/^\s/.test(text.slice(5, 6))) return null;
  const body = text.slice(5).trimStart();
  const space = body.search(/\s/);
  if (space < 0) return { tool: body, argsText: '' };
  return { tool: body.slice(0, space), argsText: body.slice(space).trimStart() };
}

export function scriptedCalls(prompt: string): Omit<ToolCall, 'id'>[] {
  const calls: Omit<ToolCall, 'id'>[] = [];
  for (const line of prompt.split('\n')) {
    const call = parseCallLine(line);
    if (!call) continue;
    calls.push({ tool: call.tool, args: call.argsText ? parseArguments(call.argsText) : {} });
  }
  return calls;
}

function lastUserIndex(messages: ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'user') return i;
  return -1;
}

export const scriptedProvider: ModelProvider = {
  models: [{ id: SCRIPTED_MODEL, label: 'Built-in scripted model (deterministic)', tier: 'test' }],
  async complete(request: ModelRequest): Promise<ModelReply> {
    const start = lastUserIndex(request.messages);
    const prompt = start >= 0 ? (request.messages[start] as { content: string }).content : '';
    const calls = scriptedCalls(prompt);
    const since = request.messages.slice(start + 1);
    const made = since.filter((m) => m.role === 'assistant' && m.tool_calls?.length).length;
    const next = calls[made];
    if (next) return { text: null, toolCalls: [{ id: `call_${made + 1}`, ...next }] };
    if (!calls.length) return { text: prompt, toolCalls: [] };
    const outcomes = since.filter((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool');
    const lines = calls.map((call, i) => `${call.tool}: ${outcomes[i]?.content ?? 'no result'}`);
    return { text: `Called ${calls.length} tool${calls.length > 1 ? 's' : ''}.\n${lines.join('\n')}`, toolCalls: [] };
  },
};
