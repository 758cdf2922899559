// The callers' steering of a run on PostgreSQL: cancel, approval decisions and their expiry. Each
// locks the run's row first, so a worker's end or a claim of the same run waits for it, or it for them.
import { APPROVAL_EXPIRED, type ApprovalRow, type CancelOutcome, type DecideOutcome, type RunControl, type RunRow } from '../../port';
import { cancelledEvent, cancelRequestedEvent, decidedEvent, finalEvent, QUEUED_EVENT, withDecision } from '../../shared/runs';
import { ACTIVE_CHILDREN, CANCEL_IDLE, DECIDE_CALL, DECIDED_STATE, EXPIRE_APPROVAL, numbered, REQUEST_CANCEL } from '../../shared/statements';
import { credit, lockRun, type PgRunContext, type Tx } from './context';

const requestCancel = numbered(REQUEST_CANCEL);
const cancelIdle = numbered(CANCEL_IDLE);
const expireApproval = numbered(EXPIRE_APPROVAL);
const decideCall = numbered(DECIDE_CALL);
const decidedState = numbered(DECIDED_STATE);
const activeChildren = numbered(ACTIVE_CHILDREN);
const APPROVAL_OF = 'SELECT * FROM run_approvals WHERE run_id = $1 AND call_id = $2';

const cancelTx = async (tx: Tx, id: string, user: string, now: string): Promise<CancelOutcome> => {
  const run = await lockRun(tx, id);
  if (!run) return { outcome: 'missing' };
  if (run.status === 'cancelled') return { outcome: 'cancelled' };
  if (run.status === 'running') {
    if ((await tx.count(requestCancel.text, requestCancel.values({ id, now, user }))) === 1) await tx.append(id, [cancelRequestedEvent(user)], now);
    return { outcome: 'requested' };
  }
  if (run.status !== 'queued' && run.status !== 'awaiting_approval') return { outcome: 'finished', status: run.status };
  if ((await tx.count(cancelIdle.text, cancelIdle.values({ id, now, user, status: run.status }))) !== 1) return { outcome: 'finished', status: run.status };
  await credit(tx, run.workspace_id, run.credits_reserved - run.credits_spent);
  await tx.append(id, [cancelledEvent(user)], now);
  return { outcome: 'cancelled' };
};

const expireTx = async (tx: Tx, id: string, message: string, now: string): Promise<boolean> => {
  if ((await tx.count(expireApproval.text, expireApproval.values({ id, error: message, now }))) !== 1) return false;
  await tx.append(id, [finalEvent('failed', message)], now);
  return true;
};

const decideTx = async (
  tx: Tx,
  runId: string,
  callId: string,
  decision: 'approve' | 'reject',
  note: string | null,
  user: string,
  now: string,
): Promise<DecideOutcome> => {
  // The run is locked before its calls are read: decisions of one run's calls made at once (on
  // any replica) then follow each other, and the last sees the others decided and resumes the
  // run. Without it, each would count the other's call still undecided and neither would resume.
  const run = await tx.row<Pick<RunRow, 'status' | 'state' | 'approval_expires_at'>>(
    'SELECT status, state, approval_expires_at FROM runs WHERE id = $1 FOR UPDATE',
    [runId],
  );
  const approval = await tx.row<ApprovalRow>(APPROVAL_OF, [runId, callId]);
  if (!run || !approval) return { outcome: 'no_call' };
  if (approval.decision !== null) return { outcome: 'decided_before', approval };
  if (run.status !== 'awaiting_approval') return { outcome: 'not_waiting', status: run.status };
  if ((run.approval_expires_at as string) <= now) {
    await expireTx(tx, runId, APPROVAL_EXPIRED, now);
    return { outcome: 'not_waiting', status: 'failed' };
  }
  if ((await tx.count(decideCall.text, decideCall.values({ run: runId, call: callId, decision, note, user, now }))) !== 1) {
    return { outcome: 'decided_before', approval: (await tx.row<ApprovalRow>(APPROVAL_OF, [runId, callId])) as ApprovalRow };
  }
  const state = withDecision(run.state, callId, { decision, note, decided_by: user, decided_at: now });
  const undecided = await tx.row<{ n: number }>('SELECT COUNT(*) AS n FROM run_approvals WHERE run_id = $1 AND decision IS NULL', [runId]);
  const last = undecided?.n === 0;
  if ((await tx.count(decidedState.text, decidedState.values({ id: runId, state, resume: last ? 1 : 0 }))) !== 1) {
    throw new Error(`run ${runId}: not awaiting approval under its lock`); // cannot happen: rolls back
  }
  await tx.append(runId, last ? [decidedEvent(callId, decision, user), QUEUED_EVENT] : [decidedEvent(callId, decision, user)], now);
  if (!last) return { outcome: 'decided' };
  tx.queued();
  return { outcome: 'resumed' };
};

export function pgRunControl(ctx: PgRunContext): RunControl {
  const { db, write } = ctx;
  return {
    cancel: (id, user, now) => write((tx) => cancelTx(tx, id, user, now)),
    decide: (runId, callId, decision, note, user, now) => write((tx) => decideTx(tx, runId, callId, decision, note, user, now)),
    expireApprovals: async (message, now) => {
      const due = await db.rows<{ id: string }>(
        `SELECT id FROM runs WHERE status = 'awaiting_approval' AND approval_expires_at <= $1 ORDER BY approval_expires_at, id LIMIT 100`,
        [now],
      );
      if (!due.length) return 0;
      return write(async (tx) => {
        let expired = 0;
        for (const { id } of due) if (await expireTx(tx, id, message, now)) expired++;
        return expired;
      }, 'visible');
    },
    activeChildren: async (id) => (await db.rows<{ id: string }>(activeChildren.text, activeChildren.values({ parent: id }))).map((r) => r.id),
  };
}
