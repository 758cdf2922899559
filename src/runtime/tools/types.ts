// What a tool implementation gets and how it fails.
import type { RenderBudget } from '../../domain/templates';
import type { KvRepository } from '../../store/port';
import type { RunLimits } from '../limits';

export interface HttpToolOptions {
  allowPrivate: boolean;
  /** The deadline of a whole exchange: lookups, connects, every redirect hop, every byte. */
  timeoutMs: number;
  /** What a whole exchange may carry: the request body and every response's headers and body. */
  maxBytes: number;
}

export interface ToolContext {
  workspaceId: string;
  kv: KvRepository;
  http: HttpToolOptions;
  /** The run's limits: a call's output and time, and what core.template may render. */
  limits: RunLimits;
  /** What the run may still render (shared by all its steps and calls). */
  budget: RenderBudget;
}

/** A failure the tool reports to its caller (a step or a model), as opposed to a bug. */
export class ToolError extends Error {}

export type ToolImplementation = (args: Record<string, unknown>, ctx: ToolContext) => Promise<unknown>;
