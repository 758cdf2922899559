// Calls a tool of an app: its arguments are checked against the tool's JSON schema first, then
// what the tool runs, within the run's time and output limits. Every outcome is a value ({ ok, output } or { ok: false, error }), so a
// failing tool never takes a run or a worker down with it.
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { ToolDefinition } from '../domain/catalog';
import { jsonBytesWithin, refusedTextIn, TOOL_ARGUMENT_RULES } from '../domain/json-limits';
import { RenderLimitError } from '../domain/templates';
import { describeValidationErrors } from '../domain/validation-errors';
import { limitErrors } from '../runtime/limits';
import { ToolError, type AppTool, type ToolContext } from './types';
import { inOutcomeSpan } from '../tracing';

const ajv = addFormats(new Ajv({ allErrors: true, strict: false }));
/** Each tool definition's compiled schema, for as long as the definition is held. */
const validators = new WeakMap<ToolDefinition, ValidateFunction>();

function validatorFor(definition: ToolDefinition): ValidateFunction {
  let validate = validators.get(definition);
  if (!validate) validators.set(definition, (validate = ajv.compile(definition.args_schema)));
  return validate;
}

export type ToolOutcome = { ok: true; output: unknown } | { ok: false; error: string };

/** The tool's answer, or a failure once `ms` have passed (the call itself is abandoned, not stopped). */
async function withinTime<T>(call: Promise<T>, ms: number): Promise<{ done: true; value: T } | { done: false }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ done: false }>((resolve) => (timer = setTimeout(() => resolve({ done: false }), ms)));
  try {
    return await Promise.race([call.then((value) => ({ done: true as const, value })), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Calls `tool` (null: `slug` names no tool of the caller's apps) with `args`; every outcome is a value. */
export const invokeTool = (slug: string, tool: AppTool | null, args: unknown, ctx: ToolContext): Promise<ToolOutcome> =>
  inOutcomeSpan(`tool ${tool ? slug : 'unknown'}`, { 'build.tool': slug }, () => invoke(slug, tool, args, ctx));

async function invoke(slug: string, tool: AppTool | null, args: unknown, ctx: ToolContext): Promise<ToolOutcome> {
  if (!tool) return { ok: false, error: `'${slug}' is not a tool of the catalog` };
  const validate = validatorFor(tool.definition);
  if (!validate(args)) {
    // ajv paths are relative to the arguments object: name them `args.<member>`.
    const errors = (validate.errors ?? []).map((e) => ({ ...e, instancePath: `/args${e.instancePath}` }));
    return { ok: false, error: `invalid arguments for ${slug}: ${describeValidationErrors(errors, () => [])}` };
  }
  // Run data can hold a lone surrogate (escaped in a webhook's JSON, in a model's arguments): no
  // tool is given text that its store or its peer would change.
  const refused = refusedTextIn(args, 'args', TOOL_ARGUMENT_RULES);
  if (refused) return { ok: false, error: `invalid arguments for ${slug}: ${refused.path}: ${refused.rule}` };
  try {
    const running = tool.run(args as Record<string, unknown>, ctx);
    const answer = tool.ownsTime ? { done: true as const, value: await running } : await withinTime(running, ctx.limits.toolTimeoutMs);
    if (!answer.done) return { ok: false, error: limitErrors.toolTime(slug, ctx.limits) };
    const output = answer.value ?? null;
    if (jsonBytesWithin(output, ctx.limits.stepOutputBytes) === null) return { ok: false, error: limitErrors.stepOutput(slug, ctx.limits) };
    return { ok: true, output };
  } catch (err) {
    if (err instanceof ToolError) return { ok: false, error: err.message };
    if (err instanceof RenderLimitError) {
      return { ok: false, error: err.limit === 'run' ? limitErrors.render(ctx.limits) : limitErrors.stepOutput(slug, ctx.limits) };
    }
    return { ok: false, error: `${slug} failed unexpectedly: ${(err as Error).message}` };
  }
}
