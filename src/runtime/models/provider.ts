// The interface between the agent loop and a model: messages and tool specs in, text or tool calls out.
import { parseJsonWithin } from '../../domain/json-limits';
import type { CatalogModel } from '../../domain/types';

export interface ToolCall {
  id: string;
  tool: string;
  args: Record<string, unknown>;
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ToolSpec {
  slug: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  model: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  reasoningEffort: 'low' | 'medium' | 'high' | null;
  /** The sampling temperature, when the caller fixes it (a judge asks for 0); else the provider's default. */
  temperature?: number;
  /** A JSON schema the answer's text must follow (structured output), when the caller wants one. */
  responseFormat?: { name: string; schema: Record<string, unknown> };
}

export interface ModelReply {
  text: string | null;
  toolCalls: ToolCall[];
}

export interface ModelProvider {
  models: CatalogModel[];
  complete(request: ModelRequest): Promise<ModelReply>;
}

/** The model could not answer (provider down, bad reply); the run fails with this message. */
export class ModelError extends Error {}

/** The call's arguments, or the text as `_unparsed` (not an object, not JSON, or nested too deep): the tool's argument check says what is wrong. */
export function parseArguments(text: string | undefined): Record<string, unknown> {
  const parsed = parseJsonWithin(text || '{}');
  if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  return { _unparsed: text };
}
