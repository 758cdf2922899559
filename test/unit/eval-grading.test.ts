// Grading one run of an eval (services/eval-grading.ts): a run the agent ran is graded by its
// criteria; a run that says nothing of the agent (refused before it began, cut off by a restart or a
// shutdown) is errored on every criterion, never failed, and calls no judge.
import type { PlannedCase } from '../../src/domain/evals/plan';
import type { EvalCaseResult } from '../../src/domain/types';
import { INTERRUPTED, SHUT_DOWN } from '../../src/runtime/runner';
import type { ModelProvider } from '../../src/runtime/models/provider';
import type { RunRow } from '../../src/store/port';
import { gradeRun } from '../../src/services/eval-grading';

const planned: PlannedCase = {
  caseId: 'a',
  prompt: 'Hello',
  criteria: [
    { id: 'says-hello', source: 'agent', check: { type: 'contains', value: 'Hello' } },
    { id: 'ends-well', source: 'agent', check: { type: 'run_status', status: 'succeeded' } },
    { id: 'polite', source: 'agent', check: { type: 'judge', rubric: 'Is polite' } },
  ],
};
const row: EvalCaseResult = { case_id: 'a', repeat: 1, run_id: null, run_status: null, passed: null, criteria: [] };

let judgeCalls = 0;
const judge: ModelProvider = {
  models: [{ id: 'judge-1', label: 'Judge', tier: 'test' }],
  async complete() {
    judgeCalls++;
    return { text: '{"score":1,"reason":"polite"}', toolCalls: [] };
  },
};
const settings = { defaultJudge: null, providerFor: () => judge, wake: () => undefined };

const run = (status: string, error: string | null, finalText: string | null) =>
  ({ id: 'run-1', status, error, credits_spent: 1, state: JSON.stringify({ final_text: finalText, tool_calls: [], steps: 1 }) }) as unknown as RunRow;

test('a run the agent ran is graded by its criteria, the judge called for the rubric', async () => {
  judgeCalls = 0;
  const graded = await gradeRun(settings, 'judge-1', planned, row, run('succeeded', null, 'Hello there'));
  expect(graded.result.criteria.map((c) => c.outcome)).toEqual(['passed', 'passed', 'passed']);
  expect([graded.judgeCalls, judgeCalls]).toEqual([1, 1]);
  const failed = await gradeRun(settings, 'judge-1', planned, row, run('failed', 'the model provider answered HTTP 500', null));
  expect(failed.result.criteria.map((c) => c.outcome).slice(0, 2)).toEqual(['failed', 'failed']);
});

test.each([
  ['refused', 'insufficient credits: the run may spend up to 3; the workspace has 0', 'the run was refused before it began, not graded'],
  ['failed', INTERRUPTED, 'the run was cut off by the service, not graded'],
  ['failed', SHUT_DOWN, 'the run was cut off by the service, not graded'],
])('a %s run (%s) is errored on every criterion and calls no judge', async (status, error, reason) => {
  judgeCalls = 0;
  const graded = await gradeRun(settings, 'judge-1', planned, row, run(status, error, null));
  expect(graded.result.criteria.map((c) => [c.outcome, c.grader])).toEqual([
    ['errored', null],
    ['errored', null],
    ['errored', null],
  ]);
  expect(graded.result.criteria[0]!.reason).toBe(`${reason} (${error})`);
  expect([graded.result.passed, graded.result.run_status, graded.judgeCalls, judgeCalls]).toEqual([false, status, 0, 0]);
});
