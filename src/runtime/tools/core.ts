// The core app: pure helpers.
import { KEEP, substitute } from '../../domain/templates';
import { ToolError, type ToolContext, type ToolImplementation } from './types';

/**
 * `{{name}}` placeholders filled from `values`; unknown names become empty text. The result counts
 * against the run's rendering budget and may not pass a tool call's output limit: a short template
 * repeating a large value is refused before it is built.
 */
function fill(template: string, values: Record<string, unknown>, ctx: ToolContext): string {
  return substitute(
    template,
    ctx.budget,
    (name) => (name && !/\s/.test(name) ? (Object.hasOwn(values, name) ? values[name] : undefined) : KEEP),
    ctx.limits.stepOutputBytes,
  );
}

function pick(value: unknown, path: string): unknown {
  let current = value;
  for (const key of path.split('.').filter(Boolean)) {
    if (current === null || typeof current !== 'object' || !Object.prototype.hasOwnProperty.call(current, key)) return null;
    current = (current as Record<string, unknown>)[key];
  }
  return current ?? null;
}

export const coreTools: Record<string, ToolImplementation> = {
  'core.echo': async (args) => args,
  'core.template': async (args, ctx) => fill(args.template as string, (args.values as Record<string, unknown>) ?? {}, ctx),
  'core.pick': async (args) => pick(args.value, args.path as string),
  'core.fail': async (args) => {
    throw new ToolError(args.message as string);
  },
  'core.sleep': async (args) => {
    const ms = args.ms as number;
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { slept_ms: ms };
  },
};
