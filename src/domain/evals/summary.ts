// An eval's numbers and its gate (docs/evals.md). The pass rate is passed grades over passed, failed
// and errored ones: a grader that failed counts against, never for. Skipped grades (no judge model)
// are left out of the rate and make the eval incomplete, as pending ones do; a gate fails on them
// unless it says otherwise.
import type { EvalCaseResult, EvalGate, EvalGateResult, EvalSummary } from '../types';

export type EvalCredits = EvalSummary['credits'];
/** A gate's result once there is one. */
export type GateVerdict = NonNullable<EvalGateResult>;

/** The summary of `results` (one per case and repeat) and the credits reserved and spent. */
export function summarize(results: readonly EvalCaseResult[], credits: EvalCredits): EvalSummary {
  const criteria = { passed: 0, failed: 0, errored: 0, skipped: 0, pending: 0 };
  for (const result of results) for (const c of result.criteria) criteria[c.outcome]++;
  const rated = criteria.passed + criteria.failed + criteria.errored;
  return {
    runs: results.length,
    runs_passed: results.filter((r) => r.passed === true).length,
    criteria,
    pass_rate: rated === 0 ? null : criteria.passed / rated,
    incomplete: criteria.skipped + criteria.pending > 0,
    credits,
  };
}

/** Whether a run's grades all passed; null while any is pending. */
export function runPassed(criteria: EvalCaseResult['criteria']): boolean | null {
  if (criteria.some((c) => c.outcome === 'pending')) return null;
  return criteria.every((c) => c.outcome === 'passed');
}

const percent = (rate: number): string => `${Math.round(rate * 1000) / 10}%`;

/**
 * Whether a finished eval met its gate, with every reason it did not. `regressions`: the criteria
 * regressed against the gate's baseline (null when it has none, or the baseline could not be read:
 * `baselineProblem` says why, and the gate fails).
 */
export function gateResult(summary: EvalSummary, gate: EvalGate, regressions: number | null, baselineProblem: string | null = null): GateVerdict {
  const reasons: string[] = [];
  if (gate.min_pass_rate !== undefined) {
    if (summary.pass_rate === null) reasons.push(`no criterion was graded, so the pass rate cannot reach ${percent(gate.min_pass_rate)}`);
    else if (summary.pass_rate < gate.min_pass_rate) reasons.push(`the pass rate ${percent(summary.pass_rate)} is below ${percent(gate.min_pass_rate)}`);
  }
  const { errored, skipped, pending } = summary.criteria;
  if (gate.errored_fails !== false && errored > 0) reasons.push(`${errored} grade${errored === 1 ? '' : 's'} errored`);
  if (gate.skipped_fails !== false && skipped > 0) reasons.push(`${skipped} grade${skipped === 1 ? ' was' : 's were'} skipped (no judge model)`);
  if (pending > 0) reasons.push(`${pending} grade${pending === 1 ? ' is' : 's are'} still pending`);
  if (baselineProblem !== null) reasons.push(baselineProblem);
  else if (gate.max_regressions !== undefined && regressions !== null && regressions > gate.max_regressions) {
    reasons.push(`${regressions} criteria regressed against the baseline; at most ${gate.max_regressions}`);
  }
  return { passed: reasons.length === 0, reasons };
}
