// What both adapters decide alike about runs: the events each transition appends, the order of
// acceptance's steps and what each outcome means, and how a decision is written into a parked
// run's state. The adapters run the statements (see steps.ts for how a write's decisions drive them).
import {
  FINAL_EVENT,
  type AcceptOutcome,
  type NewRun,
  type ReceivedMessage,
  type RunEventInput,
  type RunStatus,
  type ScheduledFire,
  type SenderRate,
} from '../port';
import { stepsOf, type Decisions } from './steps';

/** The last event of a run: how it ended. */
export function finalEvent(status: RunStatus, error: string | null): RunEventInput {
  return { type: FINAL_EVENT, data: { status, error } };
}

export const QUEUED_EVENT: RunEventInput = { type: 'run.queued', data: { status: 'queued' } };
export const STARTED_EVENT: RunEventInput = { type: 'run.started', data: { status: 'running' } };

export const cancelRequestedEvent = (user: string): RunEventInput => ({ type: 'run.cancel_requested', data: { cancelled_by: user } });
/** The end of a run cancelled while no worker held it (queued or parked). */
export const cancelledEvent = (user: string): RunEventInput => ({ type: FINAL_EVENT, data: { status: 'cancelled', error: null, cancelled_by: user } });
export const awaitingApprovalEvent = (calls: { id: string; tool: string }[], expiresAt: string): RunEventInput => ({
  type: 'run.awaiting_approval',
  data: { status: 'awaiting_approval', calls, expires_at: expiresAt },
});
export const decidedEvent = (callId: string, decision: 'approve' | 'reject', user: string): RunEventInput => ({
  type: 'approval.decided',
  data: { call_id: callId, decision, decided_by: user },
});

/** Thrown inside an accept's write to undo it whole (the delivery's or message's row included) when the trigger's or sender's rate is spent. */
export class RateLimitReached extends Error {}

/** An accept undone because the trigger's rate was spent, as its outcome; any other failure as it was. */
export function rateLimited(err: unknown): AcceptOutcome {
  if (err instanceof RateLimitReached) return { status: 'rate_limited' };
  throw err;
}

/** A run's row as acceptance inserts it (the runs table's columns). */
export interface AcceptedRun {
  id: string;
  kind: NewRun['kind'];
  workspace_id: string;
  started_by: string;
  target_id: string;
  target_version: number;
  status: 'queued' | 'refused';
  source: string;
  trigger_id: string | null;
  request: string;
  snapshot: string;
  step_agents: string | null;
  state: string;
  credits_reserved: number;
  error: string | null;
  accepted_at: string;
  finished_at: string | null;
  agent_slug: string | null;
  agent_name: string | null;
  team: string | null;
  parent_run_id: string | null;
  visible_to: string | null;
  trace_parent: string | null;
}

/** The row of a run accepted at `now`: queued with its minimum cost reserved, or refused with `refusal`. */
export function acceptedRun(run: NewRun, now: string, refusal: string | null): AcceptedRun {
  return {
    id: run.id,
    kind: run.kind,
    workspace_id: run.workspaceId,
    started_by: run.startedBy,
    target_id: run.targetId,
    target_version: run.targetVersion,
    status: refusal === null ? 'queued' : 'refused',
    source: run.source,
    trigger_id: run.triggerId ?? null,
    request: JSON.stringify(run.request),
    snapshot: run.snapshotJson,
    step_agents: run.stepAgentsJson ?? null,
    state: JSON.stringify(run.state),
    credits_reserved: refusal === null ? run.minimumCost : 0,
    error: refusal,
    accepted_at: now,
    finished_at: refusal === null ? null : now,
    agent_slug: run.agent?.slug ?? null,
    team: run.team ?? null,
    parent_run_id: run.parent?.runId ?? null,
    visible_to: run.visibleTo ?? null,
    agent_name: run.agent?.name ?? null,
    trace_parent: run.traceParent ?? null,
  };
}

/** The statements acceptance needs, each in the write's transaction. */
export interface AcceptanceSteps {
  /** Ensures the workspace's row (with the run's initial credits); the acceptance time. */
  begin(run: NewRun): string;
  /** Records the received message with run `runId` (INSERT_MESSAGE, shared/channel-messages.ts). False: a row has its key, a repeat. */
  claimMessage(message: ReceivedMessage, runId: string): boolean;
  /** The run of the row that has the message's key (committed, and seen by this write): null when it started none. */
  priorMessage(message: ReceivedMessage): string | null;
  /** Counts the message against its sender's window (COUNT_SENDER_SQL). False: past the limit. */
  countSender(message: ReceivedMessage, rate: SenderRate): boolean;
  /** Claims the delivery's row: new, or taking over one older than the repeat window. False: a repeat. */
  claimDelivery(run: NewRun, now: string): boolean;
  /** The first delivery's run and reply (committed, and seen by this write). */
  priorDelivery(run: NewRun): { runId: string; httpStatus: number };
  /** Counts the delivery against its trigger's minute (COUNT_DELIVERY_SQL). False: past the limit. */
  countDelivery(run: NewRun): boolean;
  /** The first half of a scheduled run's write (claims the due time, or the poll's new output). False: raced. */
  takeFire(fire: ScheduledFire, now: string): boolean;
  /** The conditional debit of the workspace's balance. False: it cannot cover `amount`. */
  debit(workspaceId: string, amount: number): boolean;
  balance(workspaceId: string): number;
  insert(row: AcceptedRun): void;
  append(runId: string, events: RunEventInput[], now: string): void;
  setDeliveryStatus(run: NewRun, httpStatus: number): void;
  /** The second half of a scheduled run's write: its due time recorded as fired (or refused) with the run. */
  recordFired(fire: ScheduledFire, outcome: 'fired' | 'refused', runId: string, detail: string | null, now: string): void;
  /** Moves the agent's trigger status version (its trigger's last_fired_at changed). */
  bumpAgentStatus(agentId: string): void;
  /** The run is written: the adapter's last words (PostgreSQL tells the replicas of a queued run; SQLite keeps it for polls). */
  accepted(row: AcceptedRun): void;
  /** The claim of the queued run for the accepting worker (as RunQueue.claim, with its run.started event). False: its workspace is at `cap`. */
  claimAccepted(runId: string, claim: NonNullable<NewRun['claim']>): boolean;
}

const step = stepsOf<AcceptanceSteps>();

/**
 * The acceptance of a run, in one write: the message or delivery is claimed before anything is
 * spent (a repeat writes nothing), counted against its sender's or trigger's rate only once known
 * to be new (past the limit the whole write is undone, the message's or delivery's row with it),
 * the schedule's due time taken before the debit (a raced one writes nothing), then the run is
 * queued with its minimum cost reserved, or
 * refused and recorded with the balance that could not cover it. A queued run is claimed at once for
 * the accepting process's free worker, when it offered one and the workspace's cap allows.
 */
export function* acceptance(run: NewRun, refusal: (balance: number) => string): Decisions<AcceptanceSteps, AcceptOutcome> {
  const now = yield* step('begin', run);
  if (run.message) {
    if (!(yield* step('claimMessage', run.message, run.id))) return { status: 'repeated', runId: yield* step('priorMessage', run.message), httpStatus: 0 };
    if (run.senderRate && !(yield* step('countSender', run.message, run.senderRate))) throw new RateLimitReached();
  }
  if (run.delivery && !(yield* step('claimDelivery', run, now))) return { status: 'repeated', ...(yield* step('priorDelivery', run)) };
  if (run.rate && !(yield* step('countDelivery', run))) throw new RateLimitReached();
  if (run.fire && !(yield* step('takeFire', run.fire, now))) return { status: 'raced' };
  const left = (yield* step('debit', run.workspaceId, run.minimumCost)) ? null : yield* step('balance', run.workspaceId);
  const row = acceptedRun(run, now, left === null ? null : refusal(left));
  yield* step('insert', row);
  // The row is new and not yet visible to anyone: its first events need no lock.
  yield* step('append', run.id, [left === null ? QUEUED_EVENT : finalEvent('refused', row.error)], now);
  if (run.delivery) yield* step('setDeliveryStatus', run, left === null ? 202 : 409);
  if (run.fire) yield* step('recordFired', run.fire, left === null ? 'fired' : 'refused', run.id, row.error, now);
  if (run.triggerId) yield* step('bumpAgentStatus', run.targetId); // its trigger's last_fired_at
  yield* step('accepted', row);
  if (left !== null) return { status: 'refused', balance: left };
  return { status: 'queued', claimed: run.claim ? yield* step('claimAccepted', run.id, run.claim) : false };
}

/**
 * A parked run's state with the decision of one held call written into it: the projection shows
 * the decision at once, and the worker that resumes the run reads it from there.
 */
export function withDecision(
  stateJson: string,
  callId: string,
  decision: { decision: 'approve' | 'reject'; note: string | null; decided_by: string; decided_at: string },
): string {
  const state = JSON.parse(stateJson) as { tool_calls?: { id: string; status: string; approval?: unknown }[] };
  for (const call of state.tool_calls ?? []) {
    if (call.id === callId && call.status === 'awaiting_approval') call.approval = decision;
  }
  return JSON.stringify(state);
}
