// The evals' driver (docs/evals.md): any process claims evals that are due, under a lease, and moves
// each on by its plan: it starts the runs of cases not started (a few at a time), grades the runs
// that ended, and ends the eval once every run is graded (its summary, its gate, what it held given
// back). Every write is conditional on the lease, so a driver that lost it changes nothing. A run's
// id is recorded in the eval before the run is accepted, under that id: a driver that stops
// between the two leaves the id, and the next pass accepts that run (or finds it): one run per row.
import { compareResults } from '../domain/evals/compare';
import { rowOf, type EvalPlan } from '../domain/evals/plan';
import { gateResult, summarize } from '../domain/evals/summary';
import type { Agent, EvalCaseResult, EvalListItem } from '../domain/types';
import { uuidV7 } from '../ids';
import type { Logger } from '../log';
import type { EvalEventInput, EvalRecord, EvalRepository, RunRow, Serialized } from '../store/port';
import type { ServiceContext } from './context';
import { gradeRun } from './eval-grading';
import { agentRun } from './run-builders';
import { acceptRun } from './runs';
import { periodicPass, type PeriodicPass } from './periodic-pass';

/** Evals claimed per pass, at most. */
const PER_PASS = 8;
/** Runs of one eval in flight at once: an eval of 200 cases does not take the workspace's queue whole. */
export const RUNS_IN_FLIGHT = 4;
/** When a driven eval is looked at again (by any process), after a pass. */
const AGAIN_MS = 500;
/** When an eval whose pass failed (the store, a provider) is tried again. */
const RETRY_MS = 5_000;

/** What ends an eval as failed: a state no retry changes (its agent version is gone). */
class EvalCannotGoOn extends Error {}

const FINAL = new Set(['succeeded', 'failed', 'cancelled', 'refused']);

/** The event of a graded run: its grades counted by outcome. */
function gradedEvent(result: EvalCaseResult): EvalEventInput {
  const outcomes: Record<string, number> = {};
  for (const c of result.criteria) outcomes[c.outcome] = (outcomes[c.outcome] ?? 0) + 1;
  const { case_id, repeat, run_id, run_status, passed } = result;
  return { type: 'eval.run_graded', data: { case_id, repeat, run_id, run_status, passed, outcomes } };
}

/** The last event: how the eval ended. */
const finishedEvent = (item: EvalListItem): EvalEventInput => ({
  type: 'eval.finished',
  data: { status: item.status, summary: item.summary, gate_result: item.gate_result, error: item.error },
});

export interface EvalDriverOptions {
  intervalMs: number;
  logger: Logger;
  /** This process's name in the leases it takes. */
  owner: string;
  /**
   * How long a claim on an eval holds unless renewed (RUN_LEASE_SECONDS, as a run's): it is renewed
   * every third of it while a pass drives the eval; a killed process's evals are taken over after it.
   */
  leaseMs: number;
}

export type EvalDriver = PeriodicPass;

/** The run of row `ordinal`, accepted now under the id recorded for it (unless it was: a driver that lost its lease raced). */
async function startRun(ctx: ServiceContext, record: EvalRecord, plan: EvalPlan, ordinal: number, runId: string): Promise<void> {
  const kept = await ctx.store.agents.versions.get(plan.agent.id, plan.agent.version);
  if (!kept) throw new EvalCannotGoOn(`version ${plan.agent.version} of agent '${plan.agent.slug}' is no longer kept (VERSIONS_KEPT)`);
  const { planned } = rowOf(plan, ordinal);
  const document = JSON.parse(kept.json) as Agent;
  const stored = { id: plan.agent.id, slug: plan.agent.slug, version: kept.version, json: kept.json as Serialized<Agent>, document };
  const run = agentRun(stored, { prompt: planned.prompt }, { workspaceId: record.workspaceId, startedBy: record.item.started_by, source: 'eval' });
  try {
    await acceptRun(ctx, { ...run, minimumCost: plan.agent.maxSteps }, undefined, runId);
  } catch (err) {
    if (!(await ctx.store.runs.find(runId))) throw err;
  }
}

/** The gate's verdict: regressions counted against its baseline (regressed and newly errored criteria). */
async function verdict(evals: EvalRepository, record: EvalRecord, plan: EvalPlan, results: EvalCaseResult[], item: EvalListItem) {
  if (!plan.gate) return null;
  let regressions: number | null = null;
  let problem: string | null = null;
  if (plan.gate.baseline !== undefined) {
    const baseline = await evals.find(record.workspaceId, plan.gate.baseline);
    if (!baseline) problem = `the baseline eval '${plan.gate.baseline}' is gone (pruned after RUN_RETENTION_DAYS)`;
    else {
      const { counts } = compareResults(record.id, baseline.id, results, baseline.results);
      regressions = counts.regressed + counts.newly_errored;
    }
  }
  return gateResult(item.summary, plan.gate, regressions, problem);
}

/** Grades the row's ended run and records it with the eval as it now reads; false when the lease was lost. */
async function grade(
  ctx: ServiceContext,
  owner: string,
  record: EvalRecord,
  plan: EvalPlan,
  results: EvalCaseResult[],
  ordinal: number,
  run: RunRow,
): Promise<boolean> {
  const { result, judgeCalls } = await gradeRun(ctx.evals, plan.judge, rowOf(plan, ordinal).planned, results[ordinal]!, run);
  results[ordinal] = result;
  const credits = record.item.summary.credits;
  const item: EvalListItem = {
    ...record.item,
    status: 'running',
    summary: summarize(results, { ...credits, agent: credits.agent + run.credits_spent, judge: credits.judge + judgeCalls }),
  };
  if (!(await ctx.store.evals.recordGrades(record.id, owner, [{ ordinal, result, judgeCredits: judgeCalls }], item, [gradedEvent(result)]))) return false;
  record.item = item;
  return true;
}

/** A pass over one eval may last (each judge call up to a minute): its lease is renewed meanwhile. */
function holdLease(evals: EvalRepository, id: string, owner: string, leaseMs: number, logger: Logger): NodeJS.Timeout {
  return setInterval(() => {
    void evals.renew(id, owner, Date.now() + leaseMs).catch((err: unknown) => logger.warn({ err, eval: id }, "an eval's lease could not be renewed"));
  }, leaseMs / 3);
}

export function startEvalDriver(ctx: ServiceContext, opts: EvalDriverOptions): EvalDriver {
  const evals = ctx.store.evals;
  const owner = opts.owner;
  /** Set by stop: the pass under way starts and grades nothing more. */
  let stopping = false;

  /**
   * Grades the rows whose runs ended, and starts runs of rows not started while fewer than
   * RUNS_IN_FLIGHT are running. The rows as they now stand, or null when the lease was lost.
   */
  async function advance(record: EvalRecord, plan: EvalPlan): Promise<EvalCaseResult[] | null> {
    const results = [...record.results];
    let inFlight = 0;
    for (const [ordinal, row] of results.entries()) {
      if (stopping) return null;
      if (row.passed !== null || row.run_id === null) continue;
      const run = await ctx.store.runs.find(row.run_id);
      if (!run) await startRun(ctx, record, plan, ordinal, row.run_id); // recorded, then its driver stopped: accepted now
      if (!run || !FINAL.has(run.status)) inFlight++;
      else if (!(await grade(ctx, owner, record, plan, results, ordinal, run))) return null;
    }
    for (const [ordinal, row] of results.entries()) {
      if (stopping || inFlight >= RUNS_IN_FLIGHT) break;
      if (row.run_id !== null) continue;
      const runId = uuidV7();
      const started: EvalEventInput = { type: 'eval.run_started', data: { case_id: row.case_id, repeat: row.repeat, run_id: runId } };
      // The run reserves its max_steps from the balance: what the eval held for it goes back with the record.
      if (!(await evals.recordRun(record.id, owner, ordinal, runId, started, plan.agent.maxSteps))) return null;
      results[ordinal] = { ...row, run_id: runId };
      await startRun(ctx, record, plan, ordinal, runId);
      inFlight++;
    }
    return results;
  }

  async function drive(record: EvalRecord): Promise<void> {
    // Claimed with others at the start of the pass: the lease may have run out while they were driven.
    if (stopping || !(await evals.renew(record.id, owner, Date.now() + opts.leaseMs))) return;
    const plan = JSON.parse(record.plan) as EvalPlan;
    let results: EvalCaseResult[] | null;
    const renewal = holdLease(evals, record.id, owner, opts.leaseMs, opts.logger);
    try {
      results = await advance(record, plan);
    } catch (err) {
      if (!(err instanceof EvalCannotGoOn)) {
        // A store or provider failure may pass: another pass (any process) tries again later.
        opts.logger.error({ err, eval: record.id }, 'an eval pass failed; it is tried again');
        await evals.release(record.id, owner, Date.now() + RETRY_MS);
        return;
      }
      const failed: EvalListItem = { ...record.item, status: 'failed', finished_at: new Date().toISOString(), error: err.message };
      await evals.finish(record.id, owner, failed, finishedEvent(failed));
      return;
    } finally {
      clearInterval(renewal);
    }
    if (results === null) {
      // The lease was lost (another driver has it), or the process stops (its lease is let go now).
      if (stopping) await evals.release(record.id, owner, Date.now());
      return;
    }
    if (stopping || results.some((r) => r.passed === null)) {
      await evals.release(record.id, owner, Date.now() + AGAIN_MS);
      return;
    }
    const done: EvalListItem = { ...record.item, status: 'finished', finished_at: new Date().toISOString() };
    const finished = { ...done, gate_result: await verdict(evals, record, plan, results, done) };
    await evals.finish(record.id, owner, finished, finishedEvent(finished));
  }

  const pass = async (): Promise<void> => {
    const claimed = await evals.claimDue({ owner, ms: opts.leaseMs }, PER_PASS);
    for (const { id, workspaceId } of claimed) {
      const record = await evals.find(workspaceId, id);
      if (record) await drive(record);
    }
  };
  const passes = periodicPass(pass, { intervalMs: opts.intervalMs, logger: opts.logger, what: 'eval driver pass' });
  return {
    run: passes.run,
    // The pass under way stops between runs: what it holds is released for another process.
    stop: () => {
      stopping = true;
      return passes.stop();
    },
  };
}
