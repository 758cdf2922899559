// Template references in workflow step arguments, agent-step prompts and workflow output:
// `{{inputs.<name>}}`, `{{steps.<id>.output}}` and `{{steps.<id>.output.<path>}}`. Other `{{...}}`
// text (such as core.template's own placeholders) is not a workflow reference and is left alone.
//
// Placeholders are found by a scanner, not a regex: the text is a tenant's, and a regex for them
// (such as `\{\{\s*([^{}]*?)\s*\}\}`) backtracks in cubic time on `{{` followed by spaces, which a
// small body can turn into a stalled process (docs/reliability.md). The scanner reads each
// character a bounded number of times.
// Rendering is bounded too: by the bytes one rendered template may have, and by the bytes a whole
// run may render (a RenderBudget), checked before anything large is built.
import { jsonBytesWithin, memberPath } from './json-limits';

export type TemplateRef =
  | { kind: 'input'; name: string; text: string }
  | { kind: 'step'; stepId: string; path: string[]; text: string }
  | { kind: 'malformed'; text: string };

/** One `{{ … }}` in a text: where it starts and ends, and what is between the braces, trimmed. */
export interface Placeholder {
  start: number;
  end: number;
  expression: string;
}

/**
 * The placeholders of `text`, left to right: `{{`, then text without `{` or `}`, then `}}` (as the
 * old regex matched them, including where `{{{x}}` holds `{{x}}`). Linear: a failed candidate is
 * abandoned at the first brace after its `{{`, which is where the next candidate starts.
 */
export function* placeholders(text: string): Generator<Placeholder> {
  let from = 0;
  for (;;) {
    const start = text.indexOf('{{', from);
    if (start < 0) return;
    let end = start + 2;
    while (end < text.length && text[end] !== '{' && text[end] !== '}') end++;
    if (text[end] === '}' && text[end + 1] === '}') {
      yield { start, end: end + 2, expression: text.slice(start + 2, end).trim() };
      from = end + 2;
    } else from = start + 1;
  }
}

// Both linear: anchored, and no two ways to match one text (each `-` or `.` starts the next part).
const INPUT_REF = /^inputs\.([a-z0-9_]{1,40})$/;
const STEP_REF = /^steps\.([a-z0-9]+(?:-[a-z0-9]+)*)\.output((?:\.[^.\s]+)*)$/;

const REFERENCE_HEAD = /^(inputs|steps)(\.|$)/;

function parseRef(expression: string): TemplateRef | null {
  if (!REFERENCE_HEAD.test(expression)) return null;
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
  for (const { expression } of placeholders(text)) {
    const ref = parseRef(expression);
    if (ref) refs.push(ref);
  }
  return refs;
}

/** Every string inside a JSON value, with its JSON path below `base`. */
export function stringsIn(value: unknown, base: string): { path: string; text: string }[] {
  if (typeof value === 'string') return [{ path: base, text: value }];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringsIn(v, `${base}[${i}]`));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => stringsIn(v, memberPath(base, k)));
  }
  return [];
}

/** What templates are rendered from: the run's input and the outputs of finished steps. */
export interface TemplateScope {
  inputs: Record<string, unknown>;
  steps: Record<string, unknown>;
}

/** What rendering may produce. One budget per run: `remaining` goes down with every rendering. */
export interface RenderBudget {
  /** Bytes one rendered template (a string, or a step's whole arguments) may have. */
  readonly templateBytes: number;
  /** Bytes the run may still render, all templates together. */
  remaining: number;
}

/** A rendering would pass a limit of its budget: `limit` says which. Nothing was built past it. */
export class RenderLimitError extends Error {
  constructor(readonly limit: 'template' | 'run') {
    super(limit === 'template' ? 'a rendered template would pass its limit' : 'the run would render more than its limit');
  }
}

/** Bytes rendered so far by one template, checked against both limits before each part is added. */
class Meter {
  private used = 0;
  constructor(
    private readonly budget: RenderBudget,
    private readonly maxBytes = budget.templateBytes,
  ) {}

  /** The most bytes the next part may have. */
  room(): number {
    return Math.min(this.maxBytes - this.used, this.budget.remaining);
  }

  add(bytes: number): void {
    if (this.used + bytes > this.maxBytes) throw new RenderLimitError('template');
    if (bytes > this.budget.remaining) throw new RenderLimitError('run');
    this.used += bytes;
    this.budget.remaining -= bytes;
  }

  addText(text: string): void {
    this.add(Buffer.byteLength(text));
  }

  /** Its size, or RenderLimitError (naming the nearer limit) unless `value` as JSON fits in the room left; measured without writing it out. */
  checkFits(value: unknown): number {
    const bytes = jsonBytesWithin(value, Math.max(0, this.room()));
    if (bytes === null) throw new RenderLimitError(this.maxBytes - this.used <= this.budget.remaining ? 'template' : 'run');
    return bytes;
  }
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

/** A value as it appears inside text: strings as they are, anything else as JSON (once it is known to fit). */
function asText(value: unknown, meter: Meter): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  meter.checkFits(value);
  return JSON.stringify(value);
}

/** What a placeholder's `lookup` returns to leave the placeholder as it is. */
export const KEEP: unique symbol = Symbol('keep the placeholder');

function substituteWith(text: string, meter: Meter, lookup: (expression: string) => unknown): string {
  const parts: string[] = [];
  let from = 0;
  for (const { start, end, expression } of placeholders(text)) {
    const value = lookup(expression);
    if (value === KEEP) continue;
    const literal = text.slice(from, start);
    meter.addText(literal);
    const inserted = asText(value, meter);
    meter.addText(inserted);
    parts.push(literal, inserted);
    from = end;
  }
  const rest = text.slice(from);
  meter.addText(rest);
  parts.push(rest);
  return parts.join('');
}

/**
 * `text` with each placeholder replaced by `lookup(its expression)` (strings as they are, other
 * values as JSON, null and undefined as nothing), or kept where that is KEEP. Throws
 * RenderLimitError before the result would pass `budget`, or `maxBytes` when that is smaller.
 */
export function substitute(text: string, budget: RenderBudget, lookup: (expression: string) => unknown, maxBytes = budget.templateBytes): string {
  return substituteWith(text, new Meter(budget, maxBytes), lookup);
}

const referenceValue = (scope: TemplateScope) => (expression: string) => {
  const ref = parseRef(expression);
  return ref && ref.kind !== 'malformed' ? lookup(ref, scope) : KEEP;
};

function renderTextWith(text: string, scope: TemplateScope, meter: Meter): string {
  return substituteWith(text, meter, referenceValue(scope));
}

/** The one reference a string consists of (whitespace around it allowed), if it is one. */
function wholeReference(text: string): TemplateRef | null {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{{')) return null;
  const first = placeholders(trimmed).next();
  if (first.done || first.value.start !== 0 || first.value.end !== trimmed.length) return null;
  const ref = parseRef(first.value.expression);
  return ref && ref.kind !== 'malformed' ? ref : null;
}

function renderValueWith(value: unknown, scope: TemplateScope, meter: Meter): unknown {
  if (typeof value === 'string') {
    const ref = wholeReference(value);
    if (!ref) return renderTextWith(value, scope, meter);
    const referenced = lookup(ref, scope);
    meter.add(meter.checkFits(referenced)); // before the copy is made
    return structuredClone(referenced);
  }
  if (Array.isArray(value)) return value.map((v) => renderValueWith(v, scope, meter));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderValueWith(v, scope, meter)]));
  }
  return value;
}

/** A string with its references replaced by their values as text. Throws RenderLimitError past the budget. */
export function renderText(text: string, scope: TemplateScope, budget: RenderBudget): string {
  return renderTextWith(text, scope, new Meter(budget));
}

/**
 * Renders every string inside a JSON value (the whole value is one template for the budget). A
 * string that is exactly one reference becomes the referenced value with its JSON type (a number
 * stays a number, an object an object). Throws RenderLimitError past the budget.
 */
export function renderValue(value: unknown, scope: TemplateScope, budget: RenderBudget): unknown {
  return renderValueWith(value, scope, new Meter(budget));
}

/** A budget without limits, for rendering what is not a tenant's (tests, fixed texts). */
export const unlimitedBudget = (): RenderBudget => ({ templateBytes: Number.MAX_SAFE_INTEGER, remaining: Number.MAX_SAFE_INTEGER });
