// What a worker writes of the run it holds on SQLite: progress, more credits, its end, its parking.
// Each write names the status it expects (running), so a run another path ended keeps that end.
// The workers' writes are acknowledged once committed, not once on disk (see shared/ack.ts).
import type { Parking, ProgressOutcome, RunEnd, RunEventInput, RunProgress } from '../../port';
import { awaitingApprovalEvent, finalEvent } from '../../shared/runs';
import { FINISH_RUN, HOLD_CALL, PARK_RUN } from '../../shared/statements';
import type { RunContext } from './context';

export function sqliteRunProgress(ctx: RunContext): RunProgress {
  const { db, commit, events, recent } = ctx;
  // The affected row also says whether a cancel was asked for since (by any process): the worker stops then.
  const saveState = db.prepare(
    `UPDATE runs SET state = ?, credits_spent = MIN(?, credits_reserved) WHERE id = ? AND status = 'running' RETURNING cancel_requested_at`,
  );
  const reserveMore = db.prepare(`UPDATE runs SET credits_reserved = credits_reserved + @amount WHERE id = @id AND status = 'running'`);
  const unreserve = db.prepare('UPDATE runs SET credits_reserved = credits_reserved - @amount WHERE id = @id');
  const finish = db.prepare(FINISH_RUN);
  const park = db.prepare(PARK_RUN);
  const holdCall = db.prepare(HOLD_CALL);
  const cancelRequestedOf = db.prepare('SELECT cancel_requested_at FROM runs WHERE id = ? AND status = ?').pluck();

  const saveStateTx = (id: string, current: () => { state: unknown; spent: number; events?: RunEventInput[] }): ProgressOutcome => {
    const { state, spent, events: more } = current();
    const json = JSON.stringify(state);
    const saved = saveState.get(json, spent, id) as { cancel_requested_at: string | null } | undefined;
    if (!saved) return 'not_running';
    if (more?.length) events.append(id, more, new Date().toISOString());
    recent.amend(id, (r) => ({ state: json, credits_spent: Math.min(spent, r.credits_reserved) }));
    return saved.cancel_requested_at === null ? 'saved' : 'cancel_requested';
  };

  const reserveMoreTx = (id: string, amount: number): boolean => {
    const run = ctx.creditsOf(id);
    if (!run || reserveMore.run({ id, amount }).changes !== 1) return false; // not running
    if (!ctx.debit(run.workspace_id, amount)) {
      unreserve.run({ id, amount }); // the balance cannot cover it: the reservation goes back as it was
      return false;
    }
    recent.amend(id, (r) => ({ credits_reserved: r.credits_reserved + amount }));
    return true;
  };

  const finishTx = (id: string, status: RunEnd, error: string | null, state: string, spent: number, now: string, more: RunEventInput[]): boolean => {
    const run = ctx.creditsOf(id);
    if (!run) return false;
    const charged = Math.min(spent, run.credits_reserved);
    if (finish.run({ id, status, error, state, spent: charged, now }).changes !== 1) return false; // not running
    ctx.credit(run.workspace_id, run.credits_reserved - charged);
    events.append(id, [...more, finalEvent(status, error)], now);
    recent.amend(id, () => ({
      status,
      error,
      state,
      finished_at: now,
      credits_spent: charged,
      credits_reserved: charged,
      ...(status !== 'cancelled' && { cancel_requested_at: null, cancelled_by: null }),
    }));
    return true;
  };

  const parkTx = (id: string, parking: Parking, state: string, now: string): 'parked' | ProgressOutcome => {
    const run = ctx.creditsOf(id);
    if (!run) return 'not_running';
    const charged = Math.min(parking.spent, run.credits_reserved);
    if (park.run({ id, state, spent: charged, expires: parking.expiresAt }).changes !== 1) {
      return cancelRequestedOf.get(id, 'running') ? 'cancel_requested' : 'not_running';
    }
    ctx.credit(run.workspace_id, run.credits_reserved - charged);
    for (const call of parking.calls) holdCall.run({ run: id, call: call.id, tool: call.tool, now });
    events.append(id, [...parking.events, awaitingApprovalEvent(parking.calls, parking.expiresAt)], now);
    recent.amend(id, () => ({ status: 'awaiting_approval', state, credits_spent: charged, credits_reserved: charged, approval_expires_at: parking.expiresAt }));
    return 'parked';
  };

  return {
    saveState: (id, current) =>
      ctx.announcing(
        id,
        commit.run(() => saveStateTx(id, current), 'visible'),
      ),
    reserveMore: (id, amount) => commit.run(() => reserveMoreTx(id, amount), 'visible'),
    finish: (id, status, error, state, spent, now, more = []) => {
      const json = JSON.stringify(state);
      return ctx.announcing(
        id,
        commit.run(() => finishTx(id, status, error, json, spent, now, more), 'visible'),
      );
    },
    park: (id, parking, now) => {
      const json = JSON.stringify(parking.state);
      return ctx.announcing(
        id,
        commit.run(() => parkTx(id, parking, json, now), 'visible'),
      );
    },
  };
}
