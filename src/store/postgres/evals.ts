// The evals on PostgreSQL (port/evals.ts), for any number of replicas: every write that moves an
// eval on is one transaction whose first statement is the conditional write on the eval's row
// under the driver's lease. That statement locks the row (and, under READ COMMITTED, rechecks the
// lease on the row's latest version), so a replica's claim waits for the write to commit and no
// write lands after its lease was lost; a later statement of the write that finds its condition
// false undoes it whole (EvalWriteUndone). Locks are taken in the order the runs take theirs: the
// eval's row, then the workspace's balance (credits.ts). The reservation is a slot debit
// (withDebit); what goes back, a credit to the workspace's row.
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
  byId,
} from '../shared/evals';
import { numbered } from '../shared/statements';
import { BALANCE, credit, withDebit } from './credits';
import type { PgDatabase, Sql } from './database';

const insert = numbered(INSERT_EVAL);
/** Every row of the eval in one statement (one round trip). */
const INSERT_RUNS = `INSERT INTO eval_runs (eval_id, ordinal, run_id, result)
  SELECT $1, r.ordinal, r.run_id, r.result FROM unnest($2::integer[], $3::text[], $4::text[]) AS r (ordinal, run_id, result)`;
/** The eval with its rows' runs and results in order, read in one statement: one snapshot, whatever writes run meanwhile. */
const find = numbered(`SELECT e.*,
    ARRAY(SELECT run_id FROM eval_runs WHERE eval_id = e.id ORDER BY ordinal) AS "runIds",
    ARRAY(SELECT result FROM eval_runs WHERE eval_id = e.id ORDER BY ordinal) AS results
  FROM (${FIND_EVAL}) AS e`);
const lists = [false, true].map((before) => numbered(listEvalsSql(before)));
// SKIP LOCKED: replicas claiming at once take different evals; the claim's own condition is checked
// again on the row it updates, in case another claimer moved it first.
const claim = numbered(claimEvalsSql(`IN (${DUE_EVALS} FOR UPDATE SKIP LOCKED)`));
const release = numbered(RELEASE_EVAL);
const renew = numbered(RENEW_EVAL);
const releaseHeld = numbered(RELEASE_HELD);
const markRunning = numbered(MARK_RUNNING);
const recordRun = numbered(RECORD_RUN);
const gradeEval = numbered(GRADE_EVAL);
/** The graded rows in one statement (their run recorded too, when they had none). */
const GRADE_RUNS = `UPDATE eval_runs AS r SET result = g.result, run_id = COALESCE(r.run_id, g.run_id)
  FROM unnest($2::integer[], $3::text[], $4::text[]) AS g (ordinal, run_id, result)
  WHERE r.eval_id = $1 AND r.ordinal = g.ordinal`;
const ending = numbered(`${ENDING_EVAL} FOR UPDATE`);
const finish = numbered(FINISH_EVAL);
const prune = numbered(`DELETE FROM evals WHERE id IN (${PRUNABLE_EVALS} FOR UPDATE SKIP LOCKED)`);
const appendEvent = numbered(APPEND_EVAL_EVENT);
const events = numbered(EVAL_EVENTS);
const lastEvent = numbered(LAST_EVAL_EVENT);
const append = (sql: Sql, id: string, event: EvalEventInput) => sql.count(appendEvent.text, appendEvent.values(eventParams(id, event)));

type FoundRow = EvalRow & { runIds: (string | null)[]; results: string[] };

export function pgEvalRepository(db: PgDatabase): EvalRepository {
  return {
    create: (e) =>
      // A slot that cannot cover the reservation runs the transaction again with the exact debit (credits.ts).
      withDebit((debit) =>
        db.transaction(async (sql) => {
          if (!(await debit(sql, e.workspaceId, e.reserve))) {
            const balance = (await sql.row<{ credits: number }>(BALANCE, [e.workspaceId]))?.credits ?? 0;
            return { ok: false as const, reason: 'balance' as const, balance };
          }
          await sql.count(insert.text, insert.values(evalParams(e)));
          const { ordinals, runIds, results } = runColumns(e.runs);
          if (ordinals.length) await sql.count(INSERT_RUNS, [e.id, ordinals, runIds, results]);
          await append(sql, e.id, e.event);
          return { ok: true as const };
        }),
      ),
    find: async (workspaceId, id) => {
      const row = await db.row<FoundRow>(find.text, find.values({ id, workspace: workspaceId }));
      if (!row) return null;
      const { runIds, results, ...evalRow } = row;
      return recordOf(
        evalRow,
        results.map((result, i) => ({ result, runId: runIds[i] ?? null })),
      );
    },
    list: async (workspaceId, agentId, before, limit) => {
      const statement = lists[before ? 1 : 0]!;
      const params = { workspace: workspaceId, agent: agentId, limit, before_created: before?.createdAt, before_id: before?.id };
      const rows = await db.rows<{ item: string; status: EvalStatus }>(statement.text, statement.values(params));
      return rows.map((row) => itemOf(row.item, row.status));
    },
    claimDue: async (lease, limit) => {
      const now = Date.now();
      const rows = await db.rows<ClaimedEval>(claim.text, claim.values({ owner: lease.owner, until: now + lease.ms, now, limit }));
      return rows.sort(byId);
    },
    release: async (id, owner, nextAtMs) => (await db.count(release.text, release.values({ id, owner, next: nextAtMs }))) === 1,
    renew: async (id, owner, untilMs) => (await db.count(renew.text, renew.values({ id, owner, until: untilMs }))) === 1,
    recordRun: (id, owner, ordinal, runId, event, amount) =>
      db
        .transaction(async (sql) => {
          if ((await sql.count(markRunning.text, markRunning.values({ id, owner }))) !== 1) return false;
          // The row has its run already: the status's move is undone with it (nothing written).
          if ((await sql.count(recordRun.text, recordRun.values({ id, ordinal, run: runId }))) !== 1) throw new EvalWriteUndone();
          await append(sql, id, event);
          const released = await sql.row<{ workspaceId: string }>(releaseHeld.text, releaseHeld.values({ id, owner, amount }));
          if (released) await credit(sql, released.workspaceId, amount);
          return true;
        })
        .catch(undone),
    recordGrades: (id, owner, graded, item, appended) =>
      db.transaction(async (sql) => {
        if ((await sql.count(gradeEval.text, gradeEval.values(gradeParams(id, owner, graded, item)))) !== 1) return false;
        const { runIds, results } = runColumns(graded.map((g) => g.result));
        if (graded.length) await sql.count(GRADE_RUNS, [id, graded.map((g) => g.ordinal), runIds, results]);
        for (const event of appended) await append(sql, id, event);
        return true;
      }),
    finish: async (id, owner, item, event) => {
      const params = finishParams(id, owner, item);
      return db.transaction(async (sql) => {
        const row = await sql.row<{ workspaceId: string; held: number }>(ending.text, ending.values({ id, owner }));
        if (!row) return false;
        await sql.count(finish.text, finish.values(params));
        await credit(sql, row.workspaceId, row.held);
        await append(sql, id, event);
        return true;
      });
    },
    // Read on the visible pool: a follower must see what a driver's write committed (as run events are read).
    events: (id, after, limit) => db.visible.rows<EvalEventRow>(events.text, events.values({ id, after, limit })),
    lastEvent: async (id) => (await db.visible.row<EvalEventRow>(lastEvent.text, lastEvent.values({ id }))) ?? null,
    prune: (beforeIso, limit) => db.transaction((sql) => sql.count(prune.text, prune.values({ before: beforeIso, limit })), { ack: 'visible' }),
  };
}
