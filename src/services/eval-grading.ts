// Grading one run of an eval (docs/evals.md): every criterion of its case, in order. Deterministic
// checks from what the run recorded; judged ones by the plan's judge, at temperature 0, asking for a
// verdict by its schema, one credit per call. A judging that failed or answered no verdict is
// `errored`; with no judge, `skipped`. The event loop is yielded to between criteria: a regex check
// of a long text holds it some 20 ms at most (deterministic-checks.ts).
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { gradeDeterministic, type Grade, type RunFacts } from '../domain/evals/deterministic-checks';
import { DEFAULT_JUDGE_THRESHOLD } from '../domain/evals/criteria';
import { judgedGrade, judgeMessages, VERDICT_SCHEMA } from '../domain/evals/judge';
import type { PlannedCase, PlannedCriterion } from '../domain/evals/plan';
import { runPassed } from '../domain/evals/summary';
import type { EvalCaseResult } from '../domain/types';
import type { AgentRunState } from '../runtime/agent-loop';
import { ModelError } from '../runtime/models/provider';
import { INTERRUPTED, SHUT_DOWN } from '../runtime/runner';
import type { RunRow } from '../store/port';
import type { EvalSettings } from './context';

/** What the checks read of a finished run. */
export function runFacts(run: RunRow): RunFacts {
  const state = JSON.parse(run.state) as Partial<AgentRunState>;
  return {
    status: run.status,
    finalText: state.final_text ?? null,
    toolCalls: (state.tool_calls ?? []).map((c) => ({ tool: c.tool, args: c.args })),
    steps: state.steps ?? 0,
    credits: run.credits_spent,
  };
}

const NO_JUDGE: Grade = {
  outcome: 'skipped',
  score: null,
  reason: 'no judge model: the eval named none and EVAL_JUDGE_MODEL is not set',
  grader: null,
};

/** A run the service cut off (a restart, a shutdown) says nothing of the agent. */
const CUT_OFF = new Set([INTERRUPTED, SHUT_DOWN]);

/**
 * Why the run says nothing of the agent, so that its every grade is errored rather than failed: it
 * was cut off, or refused before it began (the workspace's credits, taken by another spender between
 * the eval's release of its share and the run's acceptance). Null for a run the agent ran.
 */
function notTheAgents(run: RunRow): string | null {
  if (run.status === 'refused') return `the run was refused before it began, not graded (${run.error ?? 'refused'})`;
  if (run.status === 'failed' && run.error !== null && CUT_OFF.has(run.error)) return `the run was cut off by the service, not graded (${run.error})`;
  return null;
}

/** The judged grade, and whether a call was made (each is charged a credit). */
async function judge(
  settings: EvalSettings,
  model: string,
  criterion: PlannedCriterion & { check: { type: 'judge' } },
  task: string,
  facts: RunFacts,
): Promise<{ grade: Grade; called: boolean }> {
  const provider = settings.providerFor(model);
  if (!provider)
    return {
      grade: { outcome: 'errored', score: null, reason: `the judge model '${model}' is no longer in the catalog`, grader: `judge:${model}` },
      called: false,
    };
  const { system, user } = judgeMessages(criterion.check.rubric, task, facts);
  try {
    const reply = await provider.complete({
      model,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: user },
      ],
      tools: [],
      reasoningEffort: null,
      temperature: 0,
      responseFormat: { name: 'verdict', schema: VERDICT_SCHEMA },
    });
    return { grade: judgedGrade(reply.text, criterion.check.threshold ?? DEFAULT_JUDGE_THRESHOLD, model), called: true };
  } catch (err) {
    if (!(err instanceof ModelError)) throw err;
    return { grade: { outcome: 'errored', score: null, reason: err.message, grader: `judge:${model}` }, called: true };
  }
}

/** The run's row graded: each criterion's grade, and the judge calls made (a credit each). */
export async function gradeRun(
  settings: EvalSettings,
  judgeModel: string | null,
  planned: PlannedCase,
  row: EvalCaseResult,
  run: RunRow,
): Promise<{ result: EvalCaseResult; judgeCalls: number }> {
  const facts = runFacts(run);
  let judgeCalls = 0;
  const criteria: EvalCaseResult['criteria'] = [];
  const ungraded = notTheAgents(run);
  for (const criterion of planned.criteria) {
    await yieldToLoop();
    let grade: Grade;
    if (ungraded !== null) grade = { outcome: 'errored', score: null, reason: ungraded, grader: null };
    else if (criterion.check.type !== 'judge') grade = gradeDeterministic(criterion.check, facts);
    else if (judgeModel === null) grade = NO_JUDGE;
    else {
      const judged = await judge(settings, judgeModel, criterion as PlannedCriterion & { check: { type: 'judge' } }, planned.prompt, facts);
      grade = judged.grade;
      if (judged.called) judgeCalls++;
    }
    criteria.push({ criterion_id: criterion.id, type: criterion.check.type, source: criterion.source, ...grade });
  }
  return { result: { ...row, run_id: run.id, run_status: run.status, criteria, passed: runPassed(criteria) }, judgeCalls };
}
