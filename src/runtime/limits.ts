// What one run may cost in memory and time, whatever its steps compose: a short workflow can
// otherwise repeat a value into gigabytes (a template step repeating its input, a step tripling
// that, steps echoing it) and take the process, and every tenant with it, down. Each limit is
// checked before the large thing is built or kept, and passing one fails the step or tool call
// (and so the run) with an error that names the limit and its setting.
import { jsonBytesWithin } from '../domain/json-limits';
import type { RenderBudget } from '../domain/templates';

export interface RunLimits {
  /** Bytes of one step's or tool call's output as JSON (RUN_STEP_OUTPUT_BYTES). */
  stepOutputBytes: number;
  /** Bytes of one rendered template: a step's arguments, a prompt, the output text (RUN_TEMPLATE_BYTES). */
  templateBytes: number;
  /** Bytes one run may render in all, core.template's output included (RUN_RENDER_BYTES). */
  renderBytes: number;
  /** Bytes of a run's state as stored: step results, transcript, tool calls (RUN_STATE_BYTES). */
  stateBytes: number;
  /** Bytes of a run's final output: a workflow's output, an agent's final text (RUN_OUTPUT_BYTES). */
  outputBytes: number;
  /** How long one tool call may take (RUN_TOOL_TIMEOUT_SECONDS). */
  toolTimeoutMs: number;
  /** The setting toolTimeoutMs comes from, for its error (RUN_TOOL_TIMEOUT_SECONDS unless said). */
  toolTimeoutSetting?: string;
  /**
   * How long a workflow tool call waits for the run it started (RUN_WORKFLOW_TOOL_WAIT_SECONDS);
   * then it answers with the run's id and that it is still going (the run goes on).
   */
  workflowToolWaitMs: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_RUN_LIMITS: Readonly<RunLimits> = Object.freeze({
  stepOutputBytes: 2 * MiB, // above the http tool's 1 MiB exchange, as JSON
  templateBytes: MiB,
  renderBytes: 16 * MiB,
  stateBytes: 8 * MiB,
  outputBytes: MiB,
  toolTimeoutMs: 30_000,
  workflowToolWaitMs: 120_000,
});

export const limitErrors = {
  stepOutput: (what: string, limits: RunLimits) => `the output of ${what} is larger than ${limits.stepOutputBytes} bytes (RUN_STEP_OUTPUT_BYTES)`,
  template: (what: string, limits: RunLimits) => `${what} would be larger than ${limits.templateBytes} bytes once rendered (RUN_TEMPLATE_BYTES)`,
  render: (limits: RunLimits) => `the run would render more than ${limits.renderBytes} bytes in all (RUN_RENDER_BYTES)`,
  state: (limits: RunLimits) => `the run's state would be larger than ${limits.stateBytes} bytes (RUN_STATE_BYTES)`,
  output: (limits: RunLimits) => `the run's output is larger than ${limits.outputBytes} bytes (RUN_OUTPUT_BYTES)`,
  toolTime: (tool: string, limits: RunLimits) =>
    `${tool} took longer than ${limits.toolTimeoutMs / 1000} s (${limits.toolTimeoutSetting ?? 'RUN_TOOL_TIMEOUT_SECONDS'})`,
};

/** A run's rendering budget: what its templates (and core.template) may still produce. */
export const renderBudget = (limits: RunLimits): RenderBudget => ({ templateBytes: limits.templateBytes, remaining: limits.renderBytes });

/**
 * The size of a run's state, kept as parts are added rather than measured whole: a part that would
 * take it past the limit is refused. (The state is saved as JSON every progress interval; bounding
 * it bounds that work too.)
 */
export class StateMeter {
  private bytes: number;

  constructor(
    private readonly limit: number,
    initial: unknown = null,
  ) {
    this.bytes = jsonBytesWithin(initial, limit) ?? limit;
  }

  /** Counts `part` (as JSON); false, counting nothing, when the state would pass the limit. */
  add(part: unknown): boolean {
    const bytes = jsonBytesWithin(part, this.limit - this.bytes);
    if (bytes === null) return false;
    this.bytes += bytes;
    return true;
  }
}
