// The core app: pure helpers.
import { ToolError, type ToolImplementation } from './types';

/** `{{name}}` placeholders filled from `values`; unknown names become empty text. */
function fill(template: string, values: Record<string, unknown>): string {
  return template.replace(/\{\{\s*([^{}\s]+)\s*\}\}/g, (_m, name: string) => {
    const value = Object.prototype.hasOwnProperty.call(values, name) ? values[name] : undefined;
    if (value === undefined || value === null) return '';
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
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
  'core.template': async (args) => fill(args.template as string, (args.values as Record<string, unknown>) ?? {}),
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
