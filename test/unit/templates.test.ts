// Templates are a tenant's text: found in linear time (the regex they replace took 16 s on `{{` and
// 3,000 spaces, stalling every tenant), with the same placeholders the regex found; and rendered
// within a budget that is checked before anything large is built.
import fc from 'fast-check';
import { jsonBytesWithin } from '../../src/domain/json-limits';
import { placeholders, referencesIn, renderText, renderValue, RenderLimitError, substitute, KEEP, unlimitedBudget } from '../../src/domain/templates';
import { parseCallLine } from '../../src/runtime/models/scripted';

// What the scanner replaces, kept here as the specification of which placeholders exist.
const OLD_PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const OLD_CORE_TEMPLATE = /\{\{\s*([^{}\s]+)\s*\}\}/g;
const OLD_CALL_LINE = /^\s*\/call\s+(\S+)(?:\s+(.*))?$/;

const templateish = fc.string({ unit: fc.constantFrom('{', '}', ' ', '\n', '\t', 'a', '.', 'inputs.x', 'steps.a.output', '\u00a0'), maxLength: 40 });

describe('the placeholder scanner', () => {
  test('finds exactly the placeholders the regex found, at the same places', () => {
    fc.assert(
      fc.property(templateish, (text) => {
        const old = [...text.matchAll(OLD_PLACEHOLDER)].map((m) => ({ start: m.index, end: m.index + m[0].length, expression: m[1] }));
        expect([...placeholders(text)]).toEqual(old);
      }),
      { numRuns: 5000 },
    );
  });

  test("core.template's placeholders (names without spaces) are the regex's too", () => {
    fc.assert(
      fc.property(templateish, (text) => {
        const values = { a: 'A', 'inputs.x': 1 };
        const expected = text.replace(OLD_CORE_TEMPLATE, (_m, name: string) =>
          Object.hasOwn(values, name) ? String(values[name as keyof typeof values]) : '',
        );
        const got = substitute(text, unlimitedBudget(), (name) => (name && !/\s/.test(name) ? (values as Record<string, unknown>)[name] : KEEP));
        expect(got).toBe(expected);
      }),
      { numRuns: 5000 },
    );
  });

  test('the scripted model reads the same /call lines as the regex did', () => {
    const line = fc.string({ unit: fc.constantFrom('/call', '/', 'call', ' ', '\t', 'kv.get', '{"a":1}', 'x'), maxLength: 12 });
    fc.assert(
      fc.property(line, (text) => {
        const m = OLD_CALL_LINE.exec(text);
        const got = parseCallLine(text);
        expect(got && { tool: got.tool, args: got.argsText }).toEqual(m && { tool: m[1], args: (m[2] ?? '').trim() });
      }),
      { numRuns: 5000 },
    );
  });

  // The largest text a scanner can meet: a rendered template (RUN_TEMPLATE_BYTES, 1 MiB by default;
  // documents are at most 64 KiB). Each input took the regex seconds to minutes at a few KB.
  const MiB = 1024 * 1024;
  test.each([
    ['{{ and spaces', `{{${' '.repeat(MiB)}`],
    ['{{ and spaces, repeated', '{{ '.repeat(MiB / 3)],
    ['braces', '{'.repeat(MiB)],
    ['alternating braces', '{}'.repeat(MiB / 2)],
    ['{{ then dots', `{{${'.'.repeat(MiB)}`],
    ['unclosed references', '{{inputs.'.repeat(MiB / 9)],
    ['closed references', '{{ steps.a.output.b }}'.repeat(MiB / 22)],
  ])('linear on %s (1 MiB)', (_name, text) => {
    const started = performance.now();
    referencesIn(text);
    renderText(text, { inputs: {}, steps: {} }, unlimitedBudget());
    substitute(text, unlimitedBudget(), () => 'v');
    parseCallLine(`/call ${text}`);
    parseCallLine(`/call${' '.repeat(MiB)}x`);
    expect(performance.now() - started).toBeLessThan(1000); // linear: a few ms each; the regex took minutes
  });
});

describe('rendering within a budget', () => {
  const big = 'x'.repeat(10_000);
  const scope = { inputs: { big, obj: { list: Array.from({ length: 100 }, () => big) } }, steps: {} };

  test('one rendered template may not pass its limit: refused before it is built', () => {
    const budget = { templateBytes: 50_000, remaining: 1_000_000 };
    expect(renderText('{{inputs.big}}'.repeat(4), scope, budget)).toHaveLength(40_000);
    expect(() => renderText('{{inputs.big}}'.repeat(6), scope, budget)).toThrow(new RenderLimitError('template'));
    expect(() => renderValue({ a: '{{inputs.obj}}' }, scope, budget)).toThrow(RenderLimitError);
    expect(() => renderValue(Array(6).fill('{{inputs.big}}'), scope, budget)).toThrow(new RenderLimitError('template'));
  });

  test('what a run renders in all is bounded across templates', () => {
    const budget = { templateBytes: 50_000, remaining: 100_000 };
    for (let i = 0; i < 9; i++) renderText('{{inputs.big}}', scope, budget);
    expect(budget.remaining).toBe(10_000);
    expect(() => renderText('{{inputs.big}}!', scope, budget)).toThrow(new RenderLimitError('run'));
  });

  test('a value shared many times is measured without being written out', () => {
    // 2^40 copies of one string as JSON; a few objects in memory.
    let value: unknown = 'x';
    for (let i = 0; i < 40; i++) value = { a: value, b: value };
    const started = performance.now();
    expect(jsonBytesWithin(value, 1_000_000)).toBeNull();
    expect(() => renderText('{{inputs.v}}', { inputs: { v: value }, steps: {} }, { templateBytes: 1_000_000, remaining: 1_000_000 })).toThrow(RenderLimitError);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test('a deeply nested value is measured without recursion', () => {
    let value: unknown = 1;
    for (let i = 0; i < 100_000; i++) value = [value];
    expect(jsonBytesWithin(value, 1_000_000)).toBe(200_001);
  });
});
