// builtin/scripted: a deterministic model for tests and demos. Each prompt line
// `/call <tool-slug> <json-arguments>` becomes one tool call, one model step each, in order; then it
// answers with the tools it called and their outcomes, or, when the prompt has no such line,
// repeats the prompt. It sees tool access and results only through the loop, like any model.
import type { ChatMessage, ModelProvider, ModelReply, ModelRequest, ToolCall } from './provider';

export const SCRIPTED_MODEL = 'builtin/scripted';

const CALL_LINE = /^\s*\/call\s+(\S+)(?:\s+(.*))?$/;

export function scriptedCalls(prompt: string): Omit<ToolCall, 'id'>[] {
  const calls: Omit<ToolCall, 'id'>[] = [];
  for (const line of prompt.split('\n')) {
    const m = CALL_LINE.exec(line);
    if (!m) continue;
    let args: Record<string, unknown>;
    try {
      const parsed: unknown = m[2] ? JSON.parse(m[2]) : {};
      args = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { _unparsed: m[2] };
    } catch {
      args = { _unparsed: m[2] };
    }
    calls.push({ tool: m[1] as string, args });
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
