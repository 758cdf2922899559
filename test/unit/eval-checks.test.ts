// The deterministic checks of evals (docs/evals.md) and criteria's ids: each check passing and
// failing on recorded runs, the edges (no final text, exact against partial arguments, sequences
// with calls between), and ids that stay the same for the same criterion.
import type { EvalCheck } from '../../src/domain/types';
import { asCriterion, criterionId, DEFAULT_JUDGE_THRESHOLD } from '../../src/domain/evals/criteria';
import { argsMatch, gradeDeterministic, PATTERN_CHARS, type DeterministicCheck, type RunFacts } from '../../src/domain/evals/deterministic-checks';

const run = (over: Partial<RunFacts> = {}): RunFacts => ({
  status: 'succeeded',
  finalText: 'Hello Ada, your ticket ABC-1234 is filed.',
  toolCalls: [
    { tool: 'kv.get', args: { key: 'ticket' } },
    { tool: 'time.now', args: {} },
    { tool: 'kv.set', args: { key: 'ticket', value: { id: 7, tags: ['a', 'b'] } } },
  ],
  steps: 3,
  credits: 4,
  ...over,
});
const outcome = (check: DeterministicCheck, facts = run()) => gradeDeterministic(check, facts).outcome;

test.each<[DeterministicCheck, 'passed' | 'failed']>([
  [{ type: 'contains', value: 'ticket' }, 'passed'],
  [{ type: 'contains', value: 'TICKET' }, 'failed'],
  [{ type: 'contains', value: 'TICKET', ignore_case: true }, 'passed'],
  [{ type: 'not_contains', value: 'refund' }, 'passed'],
  [{ type: 'not_contains', value: 'Ada' }, 'failed'],
  [{ type: 'regex', pattern: '\\b[A-Z]{3}-\\d{4}\\b' }, 'passed'],
  [{ type: 'regex', pattern: '^hello', ignore_case: true }, 'passed'],
  [{ type: 'regex', pattern: '^ticket' }, 'failed'],
  [{ type: 'equals', value: 'Hello Ada, your ticket ABC-1234 is filed.' }, 'passed'],
  [{ type: 'equals', value: 'Hello Ada' }, 'failed'],
  [{ type: 'is_json' }, 'failed'],
  [{ type: 'tool_called', tool: 'kv.set' }, 'passed'],
  [{ type: 'tool_called', tool: 'http.request' }, 'failed'],
  [{ type: 'tool_not_called', tool: 'http.request' }, 'passed'],
  [{ type: 'tool_not_called', tool: 'kv.get' }, 'failed'],
  [{ type: 'tool_args_match', tool: 'kv.set', args: { key: 'ticket' } }, 'passed'],
  [{ type: 'tool_args_match', tool: 'kv.set', args: { value: { id: 7 } } }, 'passed'],
  [{ type: 'tool_args_match', tool: 'kv.set', args: { value: { tags: ['a'] } } }, 'failed'],
  [{ type: 'tool_args_match', tool: 'kv.set', args: { key: 'ticket' }, match: 'exact' }, 'failed'],
  [{ type: 'tool_args_match', tool: 'kv.get', args: { key: 'ticket' }, match: 'exact' }, 'passed'],
  [{ type: 'tool_args_match', tool: 'kv.get', args: { key: 'other' } }, 'failed'],
  [{ type: 'tool_sequence', tools: ['kv.get', 'kv.set'] }, 'passed'],
  [{ type: 'tool_sequence', tools: ['kv.set', 'kv.get'] }, 'failed'],
  [{ type: 'tool_sequence', tools: ['kv.get', 'kv.set'], strict: true }, 'failed'],
  [{ type: 'tool_sequence', tools: ['kv.get', 'time.now', 'kv.set'], strict: true }, 'passed'],
  [{ type: 'max_steps', value: 3 }, 'passed'],
  [{ type: 'max_steps', value: 2 }, 'failed'],
  [{ type: 'max_credits', value: 4 }, 'passed'],
  [{ type: 'max_credits', value: 3 }, 'failed'],
  [{ type: 'run_status', status: 'succeeded' }, 'passed'],
  [{ type: 'run_status', status: 'failed' }, 'failed'],
])('%j is %s', (check, expected) => {
  const grade = gradeDeterministic(check, run());
  expect(grade.outcome).toBe(expected);
  expect(grade.score).toBe(expected === 'passed' ? 1 : 0);
  expect(grade.grader).toBe(check.type);
  expect(grade.reason.length).toBeGreaterThan(0);
});

test('JSON checks read the final text without its surrounding whitespace; a schema says what it refused', () => {
  const json = run({ finalText: ' {"ok": true, "code": "ABC"}\n' });
  const schema = { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' }, code: { type: 'string', pattern: '^[A-Z]{3}$' } } };
  expect(outcome({ type: 'is_json' }, json)).toBe('passed');
  expect(outcome({ type: 'json_schema', schema }, json)).toBe('passed');
  const refused = gradeDeterministic({ type: 'json_schema', schema }, run({ finalText: '{"ok": true, "code": "abc"}' }));
  expect(refused).toMatchObject({ outcome: 'failed', reason: expect.stringContaining('/code must match pattern') });
  expect(outcome({ type: 'json_schema', schema }, run())).toBe('failed'); // not JSON
});

test('a run without a final text fails the text checks, except not_contains', () => {
  const silent = run({ finalText: null, status: 'failed' });
  for (const check of [{ type: 'contains', value: 'x' }, { type: 'equals', value: '' }, { type: 'regex', pattern: '.*' }, { type: 'is_json' }] as const) {
    expect(gradeDeterministic(check, silent)).toMatchObject({ outcome: 'failed', reason: 'the run has no final text' });
  }
  expect(outcome({ type: 'not_contains', value: 'x' }, silent)).toBe('passed');
});

test('a long final text: a regex reads its first characters, a json_schema check refuses it', () => {
  const long = run({ finalText: `${'a'.repeat(PATTERN_CHARS)}needle` });
  expect(gradeDeterministic({ type: 'regex', pattern: 'needle' }, long)).toMatchObject({
    outcome: 'failed',
    reason: expect.stringContaining('its first 65536'),
  });
  expect(outcome({ type: 'contains', value: 'needle' }, long)).toBe('passed');
  const bigJson = run({ finalText: JSON.stringify({ text: 'a'.repeat(PATTERN_CHARS) }) });
  expect(gradeDeterministic({ type: 'json_schema', schema: { type: 'object' } }, bigJson)).toMatchObject({
    outcome: 'failed',
    reason: expect.stringContaining('at most 65536'),
  });
});

test('arguments match partially member by member, arrays and scalars exactly', () => {
  expect(argsMatch({ a: { b: 1 } }, { a: { b: 1, c: 2 }, d: 3 }, true)).toBe(true);
  expect(argsMatch({ a: { b: 1 } }, { a: { b: 1, c: 2 } }, false)).toBe(false);
  expect(argsMatch({ a: [1, { x: 1 }] }, { a: [1, { x: 1, y: 2 }] }, true)).toBe(false);
  expect(argsMatch({ a: null }, { a: null }, true)).toBe(true);
  expect(argsMatch({ a: 1 }, { a: '1' }, true)).toBe(false);
  expect(argsMatch({}, { anything: 1 }, true)).toBe(true);
});

test("a criterion's id is its own, or derived from its content whatever its members' order", () => {
  expect(criterionId({ type: 'contains', id: 'greets', value: 'x' })).toBe('greets');
  const a = criterionId({ type: 'contains', value: 'x', ignore_case: true } as EvalCheck);
  const b = criterionId({ ignore_case: true, value: 'x', type: 'contains' } as EvalCheck);
  expect(a).toMatch(/^c_[0-9a-f]{10}$/);
  expect(a).toBe(b);
  expect(criterionId('Polite')).not.toBe(criterionId('Polite.'));
  expect(asCriterion('Polite')).toEqual({ id: criterionId('Polite'), check: { type: 'judge', rubric: 'Polite', threshold: DEFAULT_JUDGE_THRESHOLD } });
});
