// Evals (docs/evals.md): starting one (its plan frozen, what it may spend reserved, nothing run when
// the balance cannot cover it), reading and listing them, comparing two. The driver
// (eval-driver.ts) runs and grades them in the background. An eval is seen by whoever sees its agent
// (domain/spaces.ts); the datasets are the whole workspace's.
import type { Eval, EvalGate, EvalListItem, EvalRequest } from '../domain/types';
import { compareResults } from '../domain/evals/compare';
import { gradesOf, initialResults, MAX_EVAL_GRADES, planEval, reservation, type EvalPlan } from '../domain/evals/plan';
import { summarize } from '../domain/evals/summary';
import { sees } from '../domain/spaces';
import { badRequest, conflict, notFound } from '../errors';
import { isUuid, uuidV7 } from '../ids';
import { SCRIPTED_MODEL } from '../runtime/models/scripted';
import type { EvalRecord } from '../store/port';
import { findAgent } from './agents';
import type { Principal, ServiceContext } from './context';
import { findEvalDataset } from './eval-datasets';
import { DEFAULT_PAGE, decodeCursor, encodeCursor } from './pages';
import { rejectProblems } from './references';
import { keptVersion, runnableVersion } from './versions';

/** The eval as read: its list item and its rows. */
export const evalOf = (record: EvalRecord): Eval => ({ ...record.item, results: record.results });

/** The eval `id` of the caller's workspace whose agent the caller sees, or 404. */
export async function findEval(ctx: ServiceContext, who: Principal, id: string): Promise<EvalRecord> {
  const record = isUuid(id) ? await ctx.store.evals.find(who.workspaceId, id.toLowerCase()) : null;
  if (!record || !sees(who, record.team)) throw notFound(`eval '${id}' not found in this workspace`);
  return record;
}

/** The judge: the request's, or the setting's; a catalog model that is not the scripted one. */
function judgeOf(ctx: ServiceContext, requested: string | undefined): string | null {
  const judge = requested ?? ctx.evals.defaultJudge;
  if (judge === null) return null;
  const path = requested === undefined ? 'EVAL_JUDGE_MODEL' : 'body.judge';
  if (judge === SCRIPTED_MODEL) rejectProblems([{ path, message: `'${SCRIPTED_MODEL}' cannot judge (it repeats its prompt); name a model of a provider` }]);
  if (!ctx.models.some((m) => m.id === judge))
    rejectProblems([{ path, message: `'${judge}' is not a model of the catalog; GET /api/build/catalog lists them` }]);
  return judge;
}

/** The gate's baseline must be an eval of the same dataset that the caller sees. */
async function checkGate(ctx: ServiceContext, who: Principal, gate: EvalGate | undefined, datasetId: string): Promise<void> {
  if (!gate) return;
  if (gate.max_regressions !== undefined && gate.baseline === undefined) {
    rejectProblems([{ path: 'body.gate.max_regressions', message: 'needs body.gate.baseline, the eval regressions are counted against' }]);
  }
  if (gate.baseline === undefined) return;
  const baseline = await ctx.store.evals.find(who.workspaceId, gate.baseline.toLowerCase());
  if (!baseline || !sees(who, baseline.team)) rejectProblems([{ path: 'body.gate.baseline', message: `'${gate.baseline}' is not an eval of this workspace` }]);
  else if (baseline.item.status !== 'finished') {
    rejectProblems([{ path: 'body.gate.baseline', message: `eval '${gate.baseline}' is ${baseline.item.status}; a baseline is a finished eval` }]);
  } else if (baseline.item.dataset.id !== datasetId) {
    rejectProblems([
      {
        path: 'body.gate.baseline',
        message: `eval '${gate.baseline}' ran dataset '${baseline.item.dataset.slug}', not this one; compare evals of one dataset`,
      },
    ]);
  }
}

export async function startEval(ctx: ServiceContext, who: Principal, ref: string, body: EvalRequest): Promise<Eval> {
  const agent = await findAgent(ctx, who, ref);
  if (agent.document.status === 'archived') throw conflict(`agent '${agent.slug}' is archived; set its status to draft or active to evaluate it`);
  const runs = body.version === undefined ? agent : await runnableVersion({ noun: 'agent', versions: ctx.store.agents.versions }, agent, body.version);
  const current = await findEvalDataset(ctx, who, body.dataset);
  const dataset =
    body.dataset_version === undefined || body.dataset_version === current.version
      ? current.document
      : JSON.parse((await keptVersion(ctx.store.evalDatasets.versions, current, body.dataset_version, 'eval dataset', 'body.dataset_version')).json);
  const judge = judgeOf(ctx, body.judge);
  await checkGate(ctx, who, body.gate, current.id);
  const plan: EvalPlan = planEval(
    {
      agent: { id: agent.id, slug: agent.slug, version: runs.version, maxSteps: runs.document.max_steps },
      dataset: { id: current.id, slug: current.slug, version: dataset.version },
      repeats: body.repeats ?? 1,
      judge,
      // A baseline's id as stored (lower case); without max_regressions, no criterion may regress.
      gate: body.gate
        ? {
            ...body.gate,
            ...(body.gate.baseline !== undefined && { baseline: body.gate.baseline.toLowerCase(), max_regressions: body.gate.max_regressions ?? 0 }),
          }
        : null,
    },
    runs.document.eval_criteria,
    dataset,
  );
  const grades = gradesOf(plan);
  if (grades > MAX_EVAL_GRADES) {
    rejectProblems([
      {
        path: 'body.repeats',
        message: `the eval would make ${grades} grades (cases × repeats × criteria); at most ${MAX_EVAL_GRADES}: fewer repeats, or a smaller dataset`,
      },
    ]);
  }
  const results = initialResults(plan);
  const reserve = reservation(plan);
  const item: EvalListItem = {
    id: uuidV7(),
    agent: { id: plan.agent.id, slug: plan.agent.slug, version: plan.agent.version },
    dataset: plan.dataset,
    repeats: plan.repeats,
    judge,
    status: 'queued',
    gate: plan.gate,
    gate_result: null,
    summary: summarize(results, { reserved: reserve, agent: 0, judge: 0 }),
    started_by: who.userId,
    created_at: new Date().toISOString(),
    finished_at: null,
    error: null,
  };
  await ctx.store.workspaces.credits(who.workspaceId, ctx.defaultCredits); // a workspace seen for the first time gets its credits
  const outcome = await ctx.store.evals.create({
    id: item.id,
    workspaceId: who.workspaceId,
    agentId: agent.id,
    team: agent.document.space.team,
    item,
    plan: JSON.stringify(plan),
    runs: results,
    reserve,
    event: { type: 'eval.queued', data: { status: 'queued' } },
  });
  if (!outcome.ok) {
    const judged = results.reduce((n, r) => n + r.criteria.filter((c) => c.type === 'judge').length, 0);
    throw conflict(
      `insufficient credits: the eval may spend up to ${reserve} (${plan.cases.length} case${plan.cases.length === 1 ? '' : 's'}, ${plan.repeats} repeat${plan.repeats === 1 ? '' : 's'}, max_steps ${plan.agent.maxSteps}${judge === null ? '' : `, ${judged} judged grades`}); the workspace has ${outcome.balance}`,
    );
  }
  ctx.evals.wake();
  return { ...item, results };
}

/** The agent's evals, newest first, a keyset page. */
export async function listAgentEvals(ctx: ServiceContext, who: Principal, ref: string, query: { limit?: number | string; cursor?: string }) {
  const agent = await findAgent(ctx, who, ref);
  const limit = query.limit === undefined ? DEFAULT_PAGE : Number(query.limit);
  const before =
    query.cursor === undefined
      ? null
      : decodeCursor(query.cursor, ({ created_at, id }) =>
          typeof created_at === 'string' && typeof id === 'string' ? { createdAt: created_at, id } : undefined,
        );
  const items = await ctx.store.evals.list(who.workspaceId, agent.id, before, limit + 1);
  const shown = items.slice(0, limit);
  const last = shown[shown.length - 1];
  const nextCursor = items.length > limit && last ? encodeCursor({ created_at: last.created_at, id: last.id }) : null;
  return { data: shown, next_cursor: nextCursor };
}

/** The eval against the baseline, cell by cell (both seen by the caller, of one dataset). */
export async function compareEvals(ctx: ServiceContext, who: Principal, id: string, baselineId: string) {
  const current = await findEval(ctx, who, id);
  const baseline = await findEval(ctx, who, baselineId);
  if (current.item.dataset.id !== baseline.item.dataset.id) {
    throw badRequest(
      `baseline: eval '${baselineId}' ran dataset '${baseline.item.dataset.slug}', eval '${id}' dataset '${current.item.dataset.slug}'; compare evals of one dataset`,
    );
  }
  return compareResults(current.id, baseline.id, current.results, baseline.results);
}
