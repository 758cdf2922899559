// The runs of the store's port: what a run is, what its writes decide, and the run repository,
// by role, so that each caller depends on the part it uses (the runner on the queue and progress,
// the run-control service on control, the feeds on reads).
import type { ReceivedMessage, SenderRate } from './channel-messages';
import type { RunEventInput, RunEventRow } from './run-events';
import type { ScheduledFire } from './schedules';

export type RunKind = 'agent' | 'workflow';
export type RunStatus = 'queued' | 'running' | 'awaiting_approval' | 'succeeded' | 'failed' | 'refused' | 'cancelled';
/** How a worker ends a run. */
export type RunEnd = 'succeeded' | 'failed' | 'cancelled';
/** What a save of a running run's progress found: saved, saved and asked to stop, or not running (ended by another path). */
export type ProgressOutcome = 'saved' | 'cancel_requested' | 'not_running';

/** A tool call held by an approval policy, as stored with its decision. */
export interface ApprovalRow {
  run_id: string;
  call_id: string;
  tool: string;
  requested_at: string;
  decision: 'approve' | 'reject' | null;
  note: string | null;
  decided_by: string | null;
  decided_at: string | null;
}

export type CancelOutcome =
  /** Ended as cancelled by this request or an earlier one. */
  | { outcome: 'cancelled' }
  /** Running: the cancel is recorded (now or before); the worker ends it before its next step. */
  | { outcome: 'requested' }
  /** It ended otherwise first. */
  | { outcome: 'finished'; status: RunStatus }
  | { outcome: 'missing' };

export type DecideOutcome =
  /** Recorded; other held calls of the run wait for their decision. */
  | { outcome: 'decided' }
  /** Recorded, and it was the last: the run is queued again. */
  | { outcome: 'resumed' }
  | { outcome: 'decided_before'; approval: ApprovalRow }
  | { outcome: 'not_waiting'; status: RunStatus }
  | { outcome: 'no_call' };

/** What a worker hands over when it parks a run whose tool calls the approval policy held. */
export interface Parking {
  state: unknown;
  spent: number;
  calls: { id: string; tool: string }[];
  expiresAt: string;
  events: RunEventInput[];
}

/** A worker's claim on the runs it executes: who holds them, and for how long unless renewed. */
export interface Lease {
  owner: string;
  ms: number;
}

export interface RunRow {
  id: string;
  kind: RunKind;
  workspace_id: string;
  started_by: string;
  target_id: string;
  target_version: number | null;
  status: RunStatus;
  source: string;
  /** The trigger that started the run (webhook, poll), or null. */
  trigger_id: string | null;
  request: string;
  snapshot: string | null;
  /** A workflow run's agents (slug → document, JSON) as stored when it was accepted; null without agent steps. */
  step_agents: string | null;
  state: string;
  credits_reserved: number;
  credits_spent: number;
  error: string | null;
  accepted_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** When a cancel was asked for, and by whom. */
  cancel_requested_at: string | null;
  cancelled_by: string | null;
  /** While awaiting approval: when the run fails unless decided. */
  approval_expires_at: string | null;
  /** The `traceparent` of the request or trigger that queued it (tracing on), in a claimed row only. */
  trace_parent?: string | null;
  /** The space of the document it runs, when it was accepted: a team's slug, or null for the workspace's (domain/spaces.ts). */
  team: string | null;
  /** The run whose tool call started it (source `tool`), or null. */
  parent_run_id: string | null;
  /** The one user who may read it besides the rule of its source (a test's child runs: the test's starter), or null. */
  visible_to: string | null;
}

export interface NewRun {
  id: string;
  kind: RunKind;
  workspaceId: string;
  startedBy: string;
  targetId: string;
  targetVersion: number;
  /** `test`, `webhook`, `schedule` or `poll`. */
  source: string;
  /** The space of the document it runs (its team; null or absent: the workspace's). */
  team?: string | null;
  /** The run whose tool call started it (a workflow an agent called as a tool). */
  parent?: { runId: string };
  /** Only this user may read it (a test's child runs), whatever its source. */
  visibleTo?: string | null;
  /** The trigger that started it (webhook, poll). */
  triggerId?: string;
  /**
   * A webhook delivery's id (`webhook-id` or `Idempotency-Key`): recorded with the run, keyed by
   * (trigger, id), so a repeat within `repeatWindowMs` starts nothing (the outcome names the first run).
   */
  delivery?: { key: string; since: string };
  /** A schedule's or poll's due time, decided in the same write as the run (see ScheduledFire). */
  fire?: ScheduledFire;
  /**
   * Counts this delivery against its trigger's minute `window` (a number naming the minute), at
   * most `limit` a window, in the same write: a repeated delivery (above) is never counted, and past
   * the limit nothing is written ('rate_limited').
   */
  rate?: { window: number; limit: number };
  /**
   * The email or WhatsApp message that starts the run: recorded in the same write (its row's runId
   * this run's id), unless a row has its (agent, channel, direction, dedupe key) already: then
   * nothing is written ('repeated', naming that row's run, null when it started none).
   */
  message?: ReceivedMessage;
  /**
   * Counts the message (above; without one, nothing is counted) against its sender's window, at
   * most `limit` a window, in the same write: a repeated message is never counted, and past the
   * limit nothing is written, the message's row included ('rate_limited').
   */
  senderRate?: SenderRate;
  request: unknown;
  /** The document that runs, as stored (its JSON, not re-serialised). */
  snapshotJson: string;
  /** A workflow run's agents as stored at acceptance (JSON of slug → document), for its agent steps. */
  stepAgentsJson?: string;
  /** An agent run's agent, as its projections name it (kept in agent_slug and agent_name; without it, polls read the table). */
  agent?: { slug: string; name: string };
  state: unknown;
  /** Credits the run needs at least; reserved on acceptance, or the run is refused. */
  minimumCost: number;
  /** The balance of a workspace seen for the first time. */
  initialCredits: number;
  /** The `traceparent` of the request or trigger that queues it, when tracing. */
  traceParent?: string | null;
  /**
   * A worker of the accepting process that is free to execute the run now: the acceptance claims the
   * run for it in the same write (running under `lease`, its `run.started` event after `run.queued`)
   * when its workspace has fewer than `cap` runs executing; otherwise the run is queued. Either way
   * no other process is woken for it (their queue poll finds it, should it wait). Without it, a
   * queued run wakes every process's workers.
   */
  claim?: { lease: Lease; cap: number };
}

export type AcceptOutcome =
  /** `claimed`: running under the acceptance's `claim` (see NewRun.claim), rather than queued. */
  | { status: 'queued'; claimed: boolean }
  | { status: 'refused'; balance: number }
  /**
   * The delivery was received before (since `delivery.since`), or the message was (NewRun.message):
   * nothing was written; its run and reply (a message's reply is 0, and its run null when it
   * started none: it was recorded as suppressed). A delivery's repeat always names its run.
   */
  | { status: 'repeated'; runId: string | null; httpStatus: number }
  /** Another process decided the schedule's due time (or the poll's output) first: nothing was written. */
  | { status: 'raced' }
  /** The trigger received its `rate.limit` deliveries this window, or the sender its `senderRate.limit` messages: nothing was written. */
  | { status: 'rate_limited' };

/** A page of a workspace's runs of one kind, newest first (see shared/run-lists.ts). */
export interface RunListQuery {
  kind: RunKind;
  workspaceId: string;
  /** The reader: their own test runs, and every run a trigger or schedule started. */
  userId: string;
  /** The teams whose spaces the reader sees besides the workspace's; absent: every space (an administrator). */
  teams?: readonly string[];
  targetId?: string;
  statuses?: RunStatus[];
  source?: string;
  /** accepted_at ≥ this (ISO 8601, UTC). */
  acceptedFrom?: string;
  /** accepted_at < this. */
  acceptedBefore?: string;
  /** Only ids below this one (the cursor). */
  beforeId?: string;
  limit: number;
}

export interface RunListRow {
  id: string;
  /** The run as a list item of its kind, as JSON. */
  item: string;
}

/** The error of a run whose held tool calls were not decided in time. */
export const APPROVAL_EXPIRED = 'approval expired: the held tool calls were not approved or rejected in time';

/** Queues a run, or refuses it, in one write with everything that decides it (see NewRun). */
export interface RunAcceptance {
  accept(run: NewRun, refusal: (balance: number) => string): Promise<AcceptOutcome>;
}

/** The workers' side of the queue: claims under a lease, renewal, and recovery of runs no live worker holds. */
export interface RunQueue {
  /**
   * Moves the oldest queued run of a workspace with fewer than `cap` runs executing to running under
   * `lease`, and returns it. Of concurrent claimers (any process), one gets each run.
   */
  claimNext(lease: Lease, cap: number): Promise<RunRow | null>;
  /** Moves run `id` to running under `lease` if it is still queued and its workspace has fewer than `cap` executing; false otherwise. */
  claim(id: string, lease: Lease, cap: number): Promise<boolean>;
  /**
   * Extends, by `lease.ms` from now, the leases `lease.owner` still holds among these runs, and
   * returns their ids: a run missing from the answer was ended by another path (a takeover, a
   * cancel of a queued run) and its worker stops.
   */
  renewLeases(lease: Lease, ids: readonly string[]): Promise<string[]>;
  /**
   * Fails the running runs that no live worker holds, with `message`, returning what they reserved
   * and did not spend; how many. Those whose lease has passed (PostgreSQL: by the database's
   * clock). With `self`, the owner name of a runner that is starting, SQLite also fails the runs
   * any other owner holds: the serve lock makes the starting process the file's only server, so
   * their owner stopped, and they need not wait for their leases (PostgreSQL ignores it: other
   * replicas' runs are live).
   */
  recoverAbandoned(message: string, self?: string): Promise<number>;
  /**
   * At shutdown, once the grace period is over: fails the runs `owner` still holds with `message`
   * (unspent reservations returned), so that no replica waits for their leases to pass; how many.
   */
  releaseAll(owner: string, message: string): Promise<number>;
  /**
   * Calls `listener` when another process may have queued a run (PostgreSQL: a NOTIFY from any
   * replica, and after the listening connection is re-established; SQLite: never, its one server
   * queues its runs itself).
   */
  onQueued(listener: () => void): void;
}

/** What a worker writes of the run it holds: its progress, more credits, its end or its parking. */
export interface RunProgress {
  /**
   * Saves the run's progress and the credits it has spent so far (never more than it reserved), as
   * `current()` gives them when the write's group commits: a worker that reports progress several
   * times before then needs one write, and it carries the latest state, with the events reported
   * since the last save. Only a `running` run is changed: 'not_running' when another path ended it,
   * 'cancel_requested' when it was saved and a cancel has been asked for (by any process).
   */
  saveState(id: string, current: () => { state: unknown; spent: number; events?: RunEventInput[] }): Promise<ProgressOutcome>;
  /** Moves `amount` credits from the workspace's balance to a running run's reservation. False when the balance cannot cover it or the run is not running. */
  reserveMore(id: string, amount: number): Promise<boolean>;
  /**
   * Ends a `running` run with what it spent, and returns what it reserved and did not spend to the
   * workspace. False, changing nothing, when the run is not running: another path ended it first,
   * and its end (with its refund) stands.
   */
  finish(id: string, status: RunEnd, error: string | null, state: unknown, spent: number, now: string, events?: RunEventInput[]): Promise<boolean>;
  /**
   * Parks a running run whose tool calls wait for approval: it holds no worker and keeps no
   * reservation (what it did not spend goes back) until they are decided. 'cancel_requested' when
   * a cancel came first (nothing written: end it as cancelled); 'not_running' when another path ended it.
   */
  park(id: string, parking: Parking, now: string): Promise<'parked' | ProgressOutcome>;
}

/** The callers' steering of a run: cancel, approval decisions, and the expiry of undecided ones. */
export interface RunControl {
  /** Cancels a queued or parked run at once, or asks a running one to stop (see CancelOutcome). */
  cancel(id: string, userId: string, now: string): Promise<CancelOutcome>;
  /** Decides a held call (one conditional write: the first decision wins); the last decision of a run queues it again. */
  decide(runId: string, callId: string, decision: 'approve' | 'reject', note: string | null, userId: string, now: string): Promise<DecideOutcome>;
  /** Fails runs parked past their approval_expires_at with `message`; how many. */
  expireApprovals(message: string, now: string): Promise<number>;
  /** The runs started by run `id`'s tool calls that have not ended (queued, running or parked). */
  activeChildren(id: string): Promise<string[]>;
}

/** Reads of runs and their events, and the signal that a run has new events. */
export interface RunReads {
  /** The run as its projection needs it: `snapshot` holds only an agent run's agent `slug` and `name` (null for workflow runs), `step_agents` is null. */
  find(id: string): Promise<RunRow | null>;
  /** A run's events after `seq`, oldest first (at most `max`). */
  events(runId: string, seq: number, max: number): Promise<RunEventRow[]>;
  /** A run's last event's number and type, or null before its first. */
  lastEvent(runId: string): Promise<{ seq: number; type: string } | null>;
  /** Calls `listener` with a run's id after a write that added events to it committed. */
  onEvents(listener: (runId: string) => void): void;
  /** A page of a workspace's runs of one kind, newest first (see run-lists.ts). */
  list(query: RunListQuery): Promise<RunListRow[]>;
  /** When each of these triggers last started a run (refusals do not count), by trigger id. */
  lastStartedBy(triggerIds: string[]): Promise<Map<string, string>>;
  /** How many runs are queued and how many running now, across every process (partial indexes: cheap). */
  active(): Promise<{ queued: number; running: number }>;
}

/** The removal of finished runs past their retention. */
export interface RunRetention {
  /** Deletes up to `batch` runs that finished before `before`, with their events and approvals; how many. */
  pruneFinished(before: string, batch: number): Promise<number>;
}

export interface RunRepository extends RunAcceptance, RunQueue, RunProgress, RunControl, RunReads, RunRetention {}
