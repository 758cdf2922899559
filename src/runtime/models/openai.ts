// An OpenAI-compatible chat-completions provider with tool calling. Tool slugs contain dots, which
// function names may not, so `kv.set` travels as `kv__set`.
import type { OpenAiConfig } from '../../config';
import { ModelError, parseArguments, type ChatMessage, type ModelProvider, type ModelReply, type ModelRequest, type ToolCall } from './provider';
import { injectTraceContext } from '../../tracing';

const TIMEOUT_MS = 60_000;
/** The most of a provider's answer that is read; a chat completion is a few KiB. */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
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

/** The answer's text, read up to MAX_ANSWER_BYTES (then the connection is dropped). */
async function readCapped(res: Response, signal: AbortSignal): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body ?? []) {
      size += chunk.length;
      // Leaving the loop by a throw cancels the stream, which drops the connection.
      if (size > MAX_ANSWER_BYTES) {
        throw new ModelError(`the model provider's answer is over ${MAX_ANSWER_BYTES / 1024 / 1024} MiB`);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof ModelError) throw err;
    throw new ModelError(signal.aborted ? `the model provider did not answer within ${TIMEOUT_MS / 1000} s` : "the model provider's answer was cut off");
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function openAiProvider(config: OpenAiConfig): ModelProvider {
  return {
    models: config.models.map((id) => ({ id, label: `${id} (OpenAI-compatible)`, tier: 'standard' })),
    async complete(request: ModelRequest): Promise<ModelReply> {
      const body = {
        model: request.model,
        messages: request.messages.map(toOpenAiMessage),
        ...(request.tools.length && {
          tools: request.tools.map((t) => ({
            type: 'function',
            function: { name: toFunctionName(t.slug), description: t.description, parameters: t.parameters },
          })),
          tool_choice: 'auto',
        }),
        ...(request.reasoningEffort && { reasoning_effort: request.reasoningEffort }),
        ...(request.temperature !== undefined && { temperature: request.temperature }),
        ...(request.responseFormat && {
          response_format: { type: 'json_schema', json_schema: { name: request.responseFormat.name, strict: true, schema: request.responseFormat.schema } },
        }),
      };
      // What the run records is ours alone: a provider's error text can carry its internals (request
      // ids, account details, echoes of the prompt), so only its status is named.
      const signal = AbortSignal.timeout(TIMEOUT_MS);
      const headers: Record<string, string> = { 'content-type': 'application/json', ...(config.apiKey && { authorization: `Bearer ${config.apiKey}` }) };
      injectTraceContext(headers); // the provider may continue the run's trace
      let res: Response;
      try {
        res = await fetch(`${config.baseUrl}/chat/completions`, {
          method: 'POST',
          headers,
          body: JSON.stringify(body),
          signal,
        });
      } catch {
        throw new ModelError(signal.aborted ? `the model provider did not answer within ${TIMEOUT_MS / 1000} s` : 'the model provider could not be reached');
      }
      if (!res.ok) {
        void res.body?.cancel().catch(() => undefined);
        throw new ModelError(`the model provider answered HTTP ${res.status}`);
      }
      const text = await readCapped(res, signal);
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
