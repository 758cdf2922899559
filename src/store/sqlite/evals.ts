// The evals on SQLite (port/evals.ts): writes in the group commit, each one savepoint, so a write of
// several statements lands whole or not at all; reads directly. One process serves the file, yet
// every write that moves an eval on is still conditional on the driver's lease and judged by its
// changes, as on PostgreSQL. The reservation is the run acceptance's debit (runs/context.ts): one
// conditional UPDATE of the workspace's balance, never below zero.
import type { ClaimedEval, EvalEventInput, EvalEventRow, EvalRepository, EvalStatus } from '../port';
import {
  claimEvalsSql,
  DUE_EVALS,
  ENDING_EVAL,
  evalParams,
  EvalWriteUndone,
  FIND_EVAL,
  FINISH_EVAL,
  finishParams,
  GRADE_EVAL,
  GRADE_RUN,
  gradeParams,
  INSERT_EVAL,
  itemOf,
  listEvalsSql,
  MARK_RUNNING,
  PRUNABLE_EVALS,
  RECORD_RUN,
  recordOf,
  RELEASE_EVAL,
  RENEW_EVAL,
  APPEND_EVAL_EVENT,
  EVAL_EVENTS,
  LAST_EVAL_EVENT,
  eventParams,
  RELEASE_HELD,
  runColumns,
  undone,
  type EvalRow,
  type EvalRunRow,
  byId,
} from '../shared/evals';
import type { Db } from './database';
import type { GroupCommit } from './group-commit';

// This function is long because it is one member per method of the port, each a statement or two,
// and the statements they share, prepared once.
export function evalRepository(db: Db, commit: GroupCommit): EvalRepository {
  const debit = db.prepare('UPDATE workspaces SET credits = credits - @amount WHERE id = @workspace AND credits >= @amount');
  const credit = db.prepare('UPDATE workspaces SET credits = credits + @amount WHERE id = @workspace AND @amount > 0');
  const balance = db.prepare('SELECT credits FROM workspaces WHERE id = ?').pluck();
  const insert = db.prepare(INSERT_EVAL);
  const insertRun = db.prepare('INSERT INTO eval_runs (eval_id, ordinal, run_id, result) VALUES (@id, @ordinal, @run, @result)');
  const find = db.prepare(FIND_EVAL);
  const runs = db.prepare('SELECT run_id AS "runId", result FROM eval_runs WHERE eval_id = ? ORDER BY ordinal');
  const lists = [false, true].map((before) => db.prepare(listEvalsSql(before)));
  const due = db.prepare(DUE_EVALS).pluck();
  const claim = db.prepare(claimEvalsSql('= @id'));
  const release = db.prepare(RELEASE_EVAL);
  const renew = db.prepare(RENEW_EVAL);
  const releaseHeld = db.prepare(RELEASE_HELD);
  const markRunning = db.prepare(MARK_RUNNING);
  const recordRun = db.prepare(RECORD_RUN);
  const gradeEval = db.prepare(GRADE_EVAL);
  const gradeRun = db.prepare(GRADE_RUN);
  const ending = db.prepare(ENDING_EVAL);
  const finish = db.prepare(FINISH_EVAL);
  const prune = db.prepare(`DELETE FROM evals WHERE id IN (${PRUNABLE_EVALS})`);
  const appendEvent = db.prepare(APPEND_EVAL_EVENT);
  const events = db.prepare(EVAL_EVENTS);
  const lastEvent = db.prepare(LAST_EVAL_EVENT);
  const append = (id: string, event: EvalEventInput) => appendEvent.run(eventParams(id, event));

  return {
    create: (e) =>
      commit.run(() => {
        if (debit.run({ amount: e.reserve, workspace: e.workspaceId }).changes !== 1) {
          return { ok: false as const, reason: 'balance' as const, balance: (balance.get(e.workspaceId) as number | undefined) ?? 0 };
        }
        insert.run(evalParams(e));
        const { ordinals, runIds, results } = runColumns(e.runs);
        for (const ordinal of ordinals) insertRun.run({ id: e.id, ordinal, run: runIds[ordinal], result: results[ordinal] });
        append(e.id, e.event);
        return { ok: true as const };
      }),
    find: async (workspaceId, id) => {
      // Both reads in one synchronous stretch: no group commits between them.
      const row = find.get({ id, workspace: workspaceId }) as EvalRow | undefined;
      return row ? recordOf(row, runs.all(id) as EvalRunRow[]) : null;
    },
    list: async (workspaceId, agentId, before, limit) => {
      const params: Record<string, unknown> = { workspace: workspaceId, agent: agentId, limit };
      if (before) Object.assign(params, { before_created: before.createdAt, before_id: before.id });
      const rows = lists[before ? 1 : 0]!.all(params) as { item: string; status: EvalStatus }[];
      return rows.map((row) => itemOf(row.item, row.status));
    },
    claimDue: (lease, limit) =>
      commit.run(() => {
        const now = Date.now();
        const ids = due.all({ now, limit }) as string[];
        const claimed = ids.map((id) => claim.get({ id, owner: lease.owner, until: now + lease.ms, now }) as ClaimedEval | undefined);
        return claimed.filter((row): row is ClaimedEval => row !== undefined).sort(byId);
      }),
    release: (id, owner, nextAtMs) => commit.run(() => release.run({ id, owner, next: nextAtMs }).changes === 1),
    renew: (id, owner, untilMs) => commit.run(() => renew.run({ id, owner, until: untilMs }).changes === 1),
    recordRun: (id, owner, ordinal, runId, event, amount) =>
      commit
        .run(() => {
          if (markRunning.run({ id, owner }).changes !== 1) return false;
          // The row has its run already: the status's move is undone with it (nothing written).
          if (recordRun.run({ id, ordinal, run: runId }).changes !== 1) throw new EvalWriteUndone();
          append(id, event);
          const released = releaseHeld.get({ id, owner, amount }) as { workspaceId: string } | undefined;
          if (released) credit.run({ amount, workspace: released.workspaceId });
          return true;
        })
        .catch(undone),
    recordGrades: (id, owner, graded, item, appended) =>
      commit.run(() => {
        if (gradeEval.run(gradeParams(id, owner, graded, item)).changes !== 1) return false;
        for (const g of graded) gradeRun.run({ id, ordinal: g.ordinal, result: JSON.stringify(g.result), run: g.result.run_id ?? null });
        for (const event of appended) append(id, event);
        return true;
      }),
    finish: async (id, owner, item, event) => {
      const params = finishParams(id, owner, item);
      return commit.run(() => {
        const row = ending.get({ id, owner }) as { workspaceId: string; held: number } | undefined;
        if (!row) return false;
        finish.run(params);
        credit.run({ amount: row.held, workspace: row.workspaceId });
        append(id, event);
        return true;
      });
    },
    events: async (id, after, limit) => events.all({ id, after, limit }) as EvalEventRow[],
    lastEvent: async (id) => (lastEvent.get({ id }) as EvalEventRow | undefined) ?? null,
    prune: (beforeIso, limit) => commit.run(() => prune.run({ before: beforeIso, limit }).changes, 'visible'),
  };
}
