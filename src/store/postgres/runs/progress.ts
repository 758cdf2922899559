// What a worker writes of the run it holds on PostgreSQL: progress, more credits, its end, its
// parking; each in the order the worker made them (ctx.inOrder), each conditional on the run
// still running.
import type { Parking, ProgressOutcome, RunProgress } from '../../port';
import { awaitingApprovalEvent, finalEvent } from '../../shared/runs';
import { HOLD_CALL, numbered, PARK_RUN, RUN_END } from '../../shared/statements';
import { appendedEvents, withEventsAppended } from '../run-events';
import type { Sql } from '../database';
import { credit, lockRun, withDebit, writeWithEvents, type Debit, type PgRunContext, type Tx } from './context';

/**
 * A run's end in one statement (withEventsAppended): its row locked, written if still running (what
 * it spent never more than it reserved), the rest of its reservation back to its workspace, its
 * events and its final event appended.
 */
const finishRun = numbered(
  withEventsAppended(
    `UPDATE runs SET ${RUN_END}, credits_spent = LEAST(@spent::bigint, locked.credits_reserved), credits_reserved = LEAST(@spent::bigint, locked.credits_reserved)
     FROM locked WHERE runs.id = locked.id AND runs.status = 'running'
     RETURNING runs.id, runs.finished_at AS at, locked.workspace_id, locked.credits_reserved - runs.credits_spent AS refund`,
    {
      before: `locked AS (SELECT id, workspace_id, credits_reserved FROM runs WHERE id = @id AND status = 'running' FOR UPDATE)`,
      after: `credited AS (UPDATE workspaces SET credits = credits + w.refund FROM written AS w WHERE workspaces.id = w.workspace_id AND w.refund > 0)`,
    },
  ),
);
const parkRun = numbered(PARK_RUN);
const holdCall = numbered(HOLD_CALL);

const reserveMoreTx = async (tx: Sql, debit: Debit, id: string, amount: number): Promise<boolean> => {
  const run = await tx.row<{ workspace_id: string }>(
    `UPDATE runs SET credits_reserved = credits_reserved + $2 WHERE id = $1 AND status = 'running' RETURNING workspace_id`,
    [id, amount],
  );
  if (!run) return false; // not running
  if (await debit(tx, run.workspace_id, amount)) return true;
  // The balance cannot cover it: the reservation goes back as it was.
  await tx.count('UPDATE runs SET credits_reserved = credits_reserved - $2 WHERE id = $1', [id, amount]);
  return false;
};

const parkTx = async (tx: Tx, id: string, parking: Parking, state: string, now: string): Promise<'parked' | ProgressOutcome> => {
  const run = await lockRun(tx, id);
  if (!run) return 'not_running';
  const charged = Math.min(parking.spent, run.credits_reserved);
  const changed = await tx.count(parkRun.text, parkRun.values({ id, state, spent: charged, expires: parking.expiresAt }));
  if (changed !== 1) return run.status === 'running' && run.cancel_requested_at !== null ? 'cancel_requested' : 'not_running';
  await credit(tx, run.workspace_id, run.credits_reserved - charged);
  for (const call of parking.calls) await tx.count(holdCall.text, holdCall.values({ run: id, call: call.id, tool: call.tool, now }));
  await tx.append(id, [...parking.events, awaitingApprovalEvent(parking.calls, parking.expiresAt)], now);
  return 'parked';
};

export function pgRunProgress(ctx: PgRunContext): RunProgress {
  const { write, inOrder } = ctx;
  return {
    saveState: (id, current) =>
      inOrder(id, () => {
        // Taken once, outside the transaction: a transaction run again must not take (and lose) the events twice.
        const { state, spent, events: more } = current();
        const json = JSON.stringify(state);
        return write(async (tx): Promise<ProgressOutcome> => {
          const saved = await tx.row<{ cancel_requested_at: string | null }>(
            `UPDATE runs SET state = $2, credits_spent = LEAST($3::bigint, credits_reserved) WHERE id = $1 AND status = 'running' RETURNING cancel_requested_at`,
            [id, json, spent],
          );
          if (!saved) return 'not_running';
          if (more?.length) await tx.append(id, more, null);
          return saved.cancel_requested_at === null ? 'saved' : 'cancel_requested';
        }, 'visible');
      }),
    reserveMore: (id, amount) => inOrder(id, () => withDebit((debit) => write((tx) => reserveMoreTx(tx, debit, id, amount), 'visible'))),
    finish: (id, status, error, state, spent, now, more = []) => {
      const values = finishRun.values({
        id,
        status,
        error,
        state: JSON.stringify(state),
        now,
        spent,
        ...appendedEvents([...more, finalEvent(status, error)], ctx.events.limit),
      });
      return inOrder(id, async () => (await writeWithEvents(ctx, finishRun.text, values)) !== undefined);
    },
    park: (id, parking, now) => {
      const json = JSON.stringify(parking.state);
      return inOrder(id, () => write((tx) => parkTx(tx, id, parking, json, now), 'visible'));
    },
  };
}
