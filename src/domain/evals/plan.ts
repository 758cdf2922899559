// An eval's plan (docs/evals.md), frozen when it starts: what each case asks, the criteria each of
// its runs is graded on (the agent's, a case's own beside them: one with an agent's criterion's id
// replaces it for that case), the judge, and what the eval may spend. The driver follows it;
// neither a later version of the agent or dataset nor their deletion changes an eval under way.
import type { EvalCaseResult, EvalCheck, EvalCriterion, EvalDataset, EvalGate } from '../types';
import { asCriterion } from './criteria';
import { casePrompt } from './dataset';

export interface PlannedCriterion {
  id: string;
  source: 'agent' | 'case';
  check: EvalCheck;
}

export interface PlannedCase {
  caseId: string;
  prompt: string;
  criteria: PlannedCriterion[];
}

export interface EvalPlan {
  agent: { id: string; slug: string; version: number; maxSteps: number };
  dataset: { id: string; slug: string; version: number };
  repeats: number;
  /** The judge model, or null when none is available (judged criteria are then skipped). */
  judge: string | null;
  gate: EvalGate | null;
  cases: PlannedCase[];
}

/** The criteria a case's runs are graded on. */
export function caseCriteria(agentCriteria: readonly EvalCriterion[], caseOwn: readonly EvalCriterion[] = []): PlannedCriterion[] {
  const own = new Map(caseOwn.map(asCriterion).map((c) => [c.id, c]));
  const fromAgent = agentCriteria.map(asCriterion);
  const agentIds = new Set(fromAgent.map((c) => c.id));
  return [
    ...fromAgent.map((c): PlannedCriterion => (own.has(c.id) ? { ...own.get(c.id)!, source: 'case' } : { ...c, source: 'agent' })),
    ...[...own.values()].filter((c) => !agentIds.has(c.id)).map((c): PlannedCriterion => ({ ...c, source: 'case' })),
  ];
}

export function planEval(base: Omit<EvalPlan, 'cases'>, agentCriteria: readonly EvalCriterion[], dataset: EvalDataset): EvalPlan {
  return { ...base, cases: dataset.cases.map((c) => ({ caseId: c.id, prompt: casePrompt(c), criteria: caseCriteria(agentCriteria, c.criteria) })) };
}

/** Which row a case's repeat is (rows go case by case, its repeats together). */
export const ordinalOf = (plan: Pick<EvalPlan, 'repeats'>, caseIndex: number, repeat: number): number => caseIndex * plan.repeats + repeat - 1;

/** The case and repeat of a row. */
export function rowOf(plan: EvalPlan, ordinal: number): { planned: PlannedCase; repeat: number } {
  return { planned: plan.cases[Math.floor(ordinal / plan.repeats)]!, repeat: (ordinal % plan.repeats) + 1 };
}

/** The rows of a new eval: one per case and repeat, every criterion pending. */
export function initialResults(plan: EvalPlan): EvalCaseResult[] {
  return plan.cases.flatMap((c) =>
    Array.from({ length: plan.repeats }, (_, i) => ({
      case_id: c.caseId,
      repeat: i + 1,
      run_id: null,
      run_status: null,
      passed: null,
      criteria: c.criteria.map((k) => ({
        criterion_id: k.id,
        type: k.check.type,
        source: k.source,
        outcome: 'pending' as const,
        score: null,
        reason: null,
        grader: null,
      })),
    })),
  );
}

/** The most grades one eval may make (cases × repeats × criteria): its rows are read on every pass. */
export const MAX_EVAL_GRADES = 10_000;

/** How many grades the eval makes. */
export const gradesOf = (plan: EvalPlan): number => plan.cases.reduce((sum, c) => sum + plan.repeats * c.criteria.length, 0);

/** What the eval may spend at most: every run at the agent's max_steps, and one credit per judged grade (with a judge). */
export function reservation(plan: EvalPlan): number {
  return plan.cases.reduce((sum, c) => {
    const judged = plan.judge === null ? 0 : c.criteria.filter((k) => k.check.type === 'judge').length;
    return sum + plan.repeats * (plan.agent.maxSteps + judged);
  }, 0);
}
