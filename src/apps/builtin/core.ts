// The core app: pure helpers.
import { KEEP, substitute } from '../../domain/templates';
import { objectOf, tool, ToolError, type AppModule, type ToolContext } from '../types';

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
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return null;
    current = (current as Record<string, unknown>)[key];
  }
  return current ?? null;
}

export const coreApp: AppModule = {
  slug: 'core',
  name: 'Core',
  description: 'Pure helpers: echo, templates, picking members, failing on purpose, waiting.',
  tools: [
    tool('core.echo', 'Echo', 'Returns its arguments.', 'read', { type: 'object', additionalProperties: true }, async (args) => args),
    tool(
      'core.template',
      'Template',
      'Renders {{name}} placeholders in template from values.',
      'read',
      objectOf({ template: { type: 'string', maxLength: 20000 }, values: { type: 'object', additionalProperties: true } }, ['template']),
      async (args, ctx) => fill(args.template as string, (args.values as Record<string, unknown>) ?? {}, ctx),
    ),
    tool(
      'core.pick',
      'Pick',
      'Returns the member of value at a dotted path, or null.',
      'read',
      objectOf({ value: {}, path: { type: 'string', maxLength: 500 } }, ['value', 'path']),
      async (args) => pick(args.value, args.path as string),
    ),
    tool(
      'core.fail',
      'Fail',
      'Fails the step or call with message.',
      'read',
      objectOf({ message: { type: 'string', minLength: 1, maxLength: 1000 } }, ['message']),
      async (args) => {
        throw new ToolError(args.message as string);
      },
    ),
    tool(
      'core.sleep',
      'Sleep',
      'Waits ms milliseconds (at most 5000).',
      'read',
      objectOf({ ms: { type: 'integer', minimum: 0, maximum: 5000 } }, ['ms']),
      async (args) => {
        const ms = args.ms as number;
        await new Promise((resolve) => setTimeout(resolve, ms));
        return { slept_ms: ms };
      },
    ),
  ],
};
