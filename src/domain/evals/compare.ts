// Two evals compared (docs/evals.md): case by case and criterion by criterion, matched by their ids,
// each cell counting the repeats that passed. A cell's change: `newly_errored` when the eval has an
// errored grade where the baseline had none; else `improved` or `regressed` by the share of repeats
// that passed; `added` / `removed` when only one eval has it. Skipped and pending grades are not counted.
import type { EvalCaseResult, EvalComparison } from '../types';

type Cell = EvalComparison['cells'][number];
type Change = Cell['change'];

interface Tally {
  passed: number;
  graded: number;
  errored: number;
}

/** The tallies of each (case, criterion), in the order first seen. */
function tallies(results: readonly EvalCaseResult[]): Map<string, Tally & { caseId: string; criterionId: string }> {
  const cells = new Map<string, Tally & { caseId: string; criterionId: string }>();
  for (const result of results) {
    for (const c of result.criteria) {
      const key = JSON.stringify([result.case_id, c.criterion_id]);
      let cell = cells.get(key);
      if (!cell) cells.set(key, (cell = { caseId: result.case_id, criterionId: c.criterion_id, passed: 0, graded: 0, errored: 0 }));
      if (c.outcome === 'passed' || c.outcome === 'failed' || c.outcome === 'errored') cell.graded++;
      if (c.outcome === 'passed') cell.passed++;
      if (c.outcome === 'errored') cell.errored++;
    }
  }
  return cells;
}

function changeOf(now: Tally, before: Tally): Change {
  if (now.errored > 0 && before.errored === 0) return 'newly_errored';
  // Shares compared without division: a/b against c/d as a*d against c*b (no graded repeat: no share).
  if (now.graded === 0 || before.graded === 0) return 'unchanged';
  const diff = now.passed * before.graded - before.passed * now.graded;
  return diff > 0 ? 'improved' : diff < 0 ? 'regressed' : 'unchanged';
}

export function compareResults(evalId: string, baselineId: string, current: readonly EvalCaseResult[], baseline: readonly EvalCaseResult[]): EvalComparison {
  const now = tallies(current);
  const before = tallies(baseline);
  const none: Tally = { passed: 0, graded: 0, errored: 0 };
  const cells: Cell[] = [];
  const cell = (t: { caseId: string; criterionId: string }, a: Tally, b: Tally, change: Change): Cell => ({
    case_id: t.caseId,
    criterion_id: t.criterionId,
    change,
    passed: a.passed,
    baseline_passed: b.passed,
    repeats: a.graded,
    baseline_repeats: b.graded,
  });
  for (const [key, a] of now) {
    const b = before.get(key);
    cells.push(b ? cell(a, a, b, changeOf(a, b)) : cell(a, a, none, 'added'));
  }
  for (const [key, b] of before) if (!now.has(key)) cells.push(cell(b, none, b, 'removed'));
  const counts = { improved: 0, regressed: 0, unchanged: 0, newly_errored: 0, added: 0, removed: 0 };
  for (const c of cells) counts[c.change]++;
  return { eval_id: evalId, baseline_id: baselineId, counts, cells };
}
