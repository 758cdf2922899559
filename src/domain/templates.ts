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
