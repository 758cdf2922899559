// Template references in workflow step arguments, agent-step prompts and workflow output:
// `{{inputs.<name>}}`, `{{steps.<id>.output}}` and `{{steps.<id>.output.<path>}}`. Other `{{...}}`
// text (such as core.template's own placeholders) is not a workflow reference and is left alone.

export type TemplateRef =
  | { kind: 'input'; name: string; text: string }
  | { kind: 'step'; stepId: string; path: string[]; text: string }
  | { kind: 'malformed'; text: string };

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const INPUT_REF = /^inputs\.([a-z0-9_]{1,40})$/;
const STEP_REF = /^steps\.([a-z0-9]+(?:-[a-z0-9]+)*)\.output((?:\.[^.\s]+)*)$/;

function parseRef(expression: string): TemplateRef | null {
  if (!/^(inputs|steps)(\.|$)/.test(expression)) return null;
  const text = `{{${expression}}}`;
  const input = INPUT_REF.exec(expression);
  if (input) return { kind: 'input', name: input[1] as string, text };
  const step = STEP_REF.exec(expression);
  if (step) return { kind: 'step', stepId: step[1] as string, path: (step[2] ?? '').split('.').filter(Boolean), text };
  return { kind: 'malformed', text };
}

/** The references in one string. */
export function referencesIn(text: string): TemplateRef[] {
  const refs: TemplateRef[] = [];
  for (const match of text.matchAll(PLACEHOLDER)) {
    const ref = parseRef(match[1] as string);
    if (ref) refs.push(ref);
  }
  return refs;
}

/** Every string inside a JSON value, with its JSON path below `base`. */
export function stringsIn(value: unknown, base: string): { path: string; text: string }[] {
  if (typeof value === 'string') return [{ path: base, text: value }];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringsIn(v, `${base}[${i}]`));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => stringsIn(v, /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `${base}.${k}` : `${base}[${JSON.stringify(k)}]`));
  }
  return [];
}

/** What templates are rendered from: the run's input and the outputs of finished steps. */
export interface TemplateScope {
  inputs: Record<string, unknown>;
  steps: Record<string, unknown>;
}

/** A member of a plain object, own properties only (`constructor` and `__proto__` are not members of `{}`). */
const own = (object: Record<string, unknown>, key: string): unknown => (Object.hasOwn(object, key) ? object[key] : undefined);

function lookup(ref: TemplateRef, scope: TemplateScope): unknown {
  if (ref.kind === 'input') return own(scope.inputs, ref.name) ?? null;
  if (ref.kind !== 'step') return undefined;
  let value: unknown = own(scope.steps, ref.stepId);
  for (const key of ref.path) {
    if (value === null || typeof value !== 'object') return null;
    value = own(value as Record<string, unknown>, key);
  }
  return value ?? null;
}

function asText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const WHOLE = /^\s*\{\{\s*([^{}]*?)\s*\}\}\s*$/;

/** A string with its references replaced by their values as text. */
export function renderText(text: string, scope: TemplateScope): string {
  return text.replace(PLACEHOLDER, (whole, expression: string) => {
    const ref = parseRef(expression);
    return ref && ref.kind !== 'malformed' ? asText(lookup(ref, scope)) : whole;
  });
}

/**
 * Renders every string inside a JSON value. A string that is exactly one reference becomes the
 * referenced value with its JSON type (a number stays a number, an object an object).
 */
export function renderValue(value: unknown, scope: TemplateScope): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE.exec(value);
    const ref = whole ? parseRef(whole[1] as string) : null;
    if (ref && ref.kind !== 'malformed') return structuredClone(lookup(ref, scope));
    return renderText(value, scope);
  }
  if (Array.isArray(value)) return value.map((v) => renderValue(v, scope));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderValue(v, scope)]));
  }
  return value;
}
