// An OpenAI-compatible chat-completions provider with tool calling. Tool slugs contain dots, which
// function names may not, so `kv.set` travels as `kv__set`.
import type { OpenAiConfig } from '../../config';
import { ModelError, type ChatMessage, type ModelProvider, type ModelReply, type ModelRequest, type ToolCall } from './provider';

const TIMEOUT_MS = 60_000;
const toFunctionName = (slug: string) => slug.replace(/\./g, '__');
const toToolSlug = (name: string) => name.replace(/__/g, '.');

function toOpenAiMessage(m: ChatMessage): Record<string, unknown> {
  if (m.role === 'assistant') {
    return {
      role: 'assistant',
      content: m.content,
      ...(m.tool_calls?.length && {
        tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: toFunctionName(c.tool), arguments: JSON.stringify(c.args) } })),
      }),
    };
  }
  return { ...m };
}

interface ChatCompletion {
  choices?: { message?: { content?: string | null; tool_calls?: { id: string; function?: { name?: string; arguments?: string } }[] } }[];
}

function parseArguments(text: string | undefined): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text || '{}');
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // fall through: the tool's argument check will say what is wrong
  }
  return { _unparsed: text };
}

export function openAiProvider(config: OpenAiConfig): ModelProvider {
  return {
    models: config.models.map((id) => ({ id, label: `${id} (OpenAI-compatible)`, tier: 'standard' })),
    async complete(request: ModelRequest): Promise<ModelReply> {
      const body = {
        model: request.model,
        messages: request.messages.map(toOpenAiMessage),
        ...(request.tools.length && {
          tools: request.tools.map((t) => ({ type: 'function', function: { name: toFunctionName(t.slug), description: t.description, parameters: t.parameters } })),
          tool_choice: 'auto',
        }),
        ...(request.reasoningEffort && { reasoning_effort: request.reasoningEffort }),
      };
      let res: Response;
      try {
        res = await fetch(`${config.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(config.apiKey && { authorization: `Bearer ${config.apiKey}` }) },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
      } catch (err) {
        throw new ModelError(`the model provider could not be reached: ${(err as Error).message}`);
      }
      const text = await res.text();
      if (!res.ok) throw new ModelError(`the model provider answered ${res.status}: ${text.slice(0, 200)}`);
      let completion: ChatCompletion;
      try {
        completion = JSON.parse(text) as ChatCompletion;
      } catch {
        throw new ModelError('the model provider answered something that is not JSON');
      }
      const message = completion.choices?.[0]?.message;
      if (!message) throw new ModelError('the model provider answered no choice');
      const toolCalls: ToolCall[] = (message.tool_calls ?? []).map((c) => ({
        id: c.id,
        tool: toToolSlug(c.function?.name ?? ''),
        args: parseArguments(c.function?.arguments),
      }));
      return { text: message.content ?? null, toolCalls };
    },
  };
}
