// `build-api eval`'s options as the request it sends (the gate always sent: the exit code says
// whether the eval is good enough), refused options, and the table it prints.
import { EvalCommandError, evalRequest, tableText } from '../../src/eval-cli';

test('the options become the request; the gate is always sent', () => {
  expect(evalRequest({ agent: 'triage', dataset: 'refunds' })).toEqual({ agent: 'triage', body: { dataset: 'refunds', gate: {} } });
  const base = '0c9e4f6a-1b2d-4e3f-8a5b-6c7d8e9f0a1b';
  expect(
    evalRequest({
      agent: 'triage',
      dataset: 'refunds',
      version: '3',
      'dataset-version': '2',
      repeats: '2',
      judge: 'judge-1',
      baseline: base,
      'min-pass-rate': '0.9',
      'allow-errored': true,
      'allow-skipped': true,
    }).body,
  ).toEqual({
    dataset: 'refunds',
    version: 3,
    dataset_version: 2,
    repeats: 2,
    judge: 'judge-1',
    gate: { min_pass_rate: 0.9, errored_fails: false, skipped_fails: false, baseline: base, max_regressions: 0 },
  });
});

test.each([
  [{ dataset: 'x' }, "--agent: required (the agent's slug or id)"],
  [{ agent: 'x' }, "--dataset: required (the dataset's slug or id)"],
  [{ agent: 'x', dataset: 'y', repeats: '6' }, '--repeats: must be a whole number from 1 to 5'],
  [{ agent: 'x', dataset: 'y', 'min-pass-rate': '90%' }, '--min-pass-rate: must be a number from 0 to 1'],
  [{ agent: 'x', dataset: 'y', 'max-regressions': '1' }, '--max-regressions: needs --baseline'],
])('%j is refused: %s', (values, message) => {
  expect(() => evalRequest(values)).toThrow(new EvalCommandError(message));
});

test('the table pads each column to its widest cell', () => {
  expect(
    tableText([
      { case: 'a', passed: 10 },
      { case: 'longer', passed: 2 },
    ]),
  ).toBe('case    passed\n------  ------\na       10\nlonger  2');
  expect(tableText([])).toBe('(no results)');
});
