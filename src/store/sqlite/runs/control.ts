// The callers' steering of a run on SQLite: cancel, approval decisions, and the expiry of
// undecided ones. Each is one transaction whose conditional writes decide between racing callers.
import { APPROVAL_EXPIRED, type ApprovalRow, type CancelOutcome, type DecideOutcome, type RunControl, type RunRow } from '../../port';
import { cancelledEvent, cancelRequestedEvent, decidedEvent, finalEvent, QUEUED_EVENT, withDecision } from '../../shared/runs';
import { ACTIVE_CHILDREN, CANCEL_IDLE, DECIDE_CALL, DECIDED_STATE, EXPIRE_APPROVAL, REQUEST_CANCEL } from '../../shared/statements';
import type { RunContext } from './context';

type ControlRow = Pick<RunRow, 'status' | 'workspace_id' | 'credits_reserved' | 'credits_spent' | 'cancel_requested_at' | 'state' | 'approval_expires_at'>;

export function sqliteRunControl(ctx: RunContext): RunControl {
  const { db, commit, events, recent } = ctx;
  const controlOf = db.prepare(
    'SELECT status, workspace_id, credits_reserved, credits_spent, cancel_requested_at, state, approval_expires_at FROM runs WHERE id = ?',
  );
  const cancelIdle = db.prepare(CANCEL_IDLE);
  const requestCancel = db.prepare(REQUEST_CANCEL);
  const approvalOf = db.prepare('SELECT * FROM run_approvals WHERE run_id = ? AND call_id = ?');
  const decideCall = db.prepare(DECIDE_CALL);
  const undecided = db.prepare('SELECT COUNT(*) FROM run_approvals WHERE run_id = ? AND decision IS NULL').pluck();
  const decidedState = db.prepare(DECIDED_STATE);
  const parkedPast = db
    .prepare(`SELECT id FROM runs WHERE status = 'awaiting_approval' AND approval_expires_at <= ? ORDER BY approval_expires_at LIMIT 100`)
    .pluck();
  const expire = db.prepare(EXPIRE_APPROVAL);
  const activeChildren = db.prepare(ACTIVE_CHILDREN).pluck();

  const cancelTx = (id: string, user: string, now: string): CancelOutcome => {
    const run = controlOf.get(id) as ControlRow | undefined;
    if (!run) return { outcome: 'missing' };
    if (run.status === 'cancelled') return { outcome: 'cancelled' };
    if (run.status === 'running') {
      if (requestCancel.run({ id, user, now }).changes === 1) {
        events.append(id, [cancelRequestedEvent(user)], now);
        recent.amend(id, () => ({ cancel_requested_at: now, cancelled_by: user }));
      }
      return { outcome: 'requested' };
    }
    if (run.status !== 'queued' && run.status !== 'awaiting_approval') return { outcome: 'finished', status: run.status };
    if (cancelIdle.run({ id, user, now, status: run.status }).changes !== 1) return { outcome: 'finished', status: run.status };
    ctx.credit(run.workspace_id, run.credits_reserved - run.credits_spent);
    events.append(id, [cancelledEvent(user)], now);
    recent.amend(id, (r) => ({ status: 'cancelled', finished_at: now, cancel_requested_at: now, cancelled_by: user, credits_reserved: r.credits_spent }));
    return { outcome: 'cancelled' };
  };

  const expireTx = (id: string, message: string, now: string): boolean => {
    if (expire.run({ id, error: message, now }).changes !== 1) return false;
    events.append(id, [finalEvent('failed', message)], now);
    recent.amend(id, () => ({ status: 'failed', error: message, finished_at: now }));
    return true;
  };

  const decideTx = (runId: string, callId: string, decision: 'approve' | 'reject', note: string | null, user: string, now: string): DecideOutcome => {
    const approval = approvalOf.get(runId, callId) as ApprovalRow | undefined;
    if (!approval) return { outcome: 'no_call' };
    if (approval.decision !== null) return { outcome: 'decided_before', approval };
    const run = controlOf.get(runId) as ControlRow;
    if (run.status !== 'awaiting_approval') return { outcome: 'not_waiting', status: run.status };
    if ((run.approval_expires_at as string) <= now) {
      expireTx(runId, APPROVAL_EXPIRED, now);
      return { outcome: 'not_waiting', status: 'failed' };
    }
    if (decideCall.run({ run: runId, call: callId, decision, note, user, now }).changes !== 1) {
      return { outcome: 'decided_before', approval: approvalOf.get(runId, callId) as ApprovalRow };
    }
    const state = withDecision(run.state, callId, { decision, note, decided_by: user, decided_at: now });
    const last = undecided.get(runId) === 0;
    decidedState.run({ id: runId, state, resume: last ? 1 : 0 });
    events.append(runId, last ? [decidedEvent(callId, decision, user), QUEUED_EVENT] : [decidedEvent(callId, decision, user)], now);
    recent.amend(runId, () => (last ? { status: 'queued', state, approval_expires_at: null } : { state }));
    return { outcome: last ? 'resumed' : 'decided' };
  };

  return {
    cancel: (id, user, now) =>
      ctx.announcing(
        id,
        commit.run(() => cancelTx(id, user, now)),
      ),
    decide: (runId, callId, decision, note, user, now) =>
      ctx.announcing(
        runId,
        commit.run(() => decideTx(runId, callId, decision, note, user, now)),
      ),
    expireApprovals: async (message, now) => {
      const ids = parkedPast.all(now) as string[];
      if (!ids.length) return 0;
      const expired = await commit.run(() => ids.filter((id) => expireTx(id, message, now)));
      expired.forEach(ctx.announce);
      return expired.length;
    },
    activeChildren: async (id) => activeChildren.all({ parent: id }) as string[],
  };
}
