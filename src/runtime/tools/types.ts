// What a tool implementation gets and how it fails.
import type { KvRepository } from '../../store';

export interface HttpToolOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  maxResponseBytes: number;
}

export interface ToolContext {
  workspaceId: string;
  kv: KvRepository;
  http: HttpToolOptions;
}

/** A failure the tool reports to its caller (a step or a model), as opposed to a bug. */
export class ToolError extends Error {}

export type ToolImplementation = (args: Record<string, unknown>, ctx: ToolContext) => Promise<unknown>;
