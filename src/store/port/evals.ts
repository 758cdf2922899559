// The evals of the store's port (docs/evals.md): an eval's frozen plan and where it stands, one row
// per case and repeat (its run, its grades), the credits it holds, and the lease of the process that
// drives it. Every write that moves an eval on is conditional on the driver's lease, so two
// processes never drive one eval at once; a driver that dies lets its lease run out.
import type { EvalCaseResult, EvalListItem } from '../../domain/types';
import type { Lease } from './runs';

export type EvalStatus = EvalListItem['status'];

/** What every eval stores: whose it is, its list item, its plan. */
interface EvalBase {
  id: string;
  workspaceId: string;
  agentId: string;
  /** The agent's space's team (null: the workspace's), for who sees the eval. */
  team: string | null;
  /** The eval as its list item reads (at first `status: queued`, a summary of pending grades). */
  item: EvalListItem;
  /** The plan the driver follows (JSON): the agent version, the cases' prompts and criteria, the judge. Opaque to the store. */
  plan: string;
}

/** What a new eval stores: its list item as first read (queued, nothing graded), its plan, its rows. */
export interface NewEval extends EvalBase {
  /** One per case and repeat, in order; each with its criteria pending. */
  runs: EvalCaseResult[];
  /** Credits taken from the workspace's balance now, held by the eval until it ends. */
  reserve: number;
  /** Its first event (eval.queued). */
  event: EvalEventInput;
}

export type CreateEvalOutcome = { ok: true } | { ok: false; reason: 'balance'; balance: number };

/** An eval as stored: its list item (as of its last write), its plan, its rows. */
export interface EvalRecord extends EvalBase {
  /** Credits the eval still holds. */
  held: number;
  results: EvalCaseResult[];
}

/** An event of the eval's stream, appended in the write that made it so (numbered from 1 per eval). */
export interface EvalEventInput {
  type: 'eval.queued' | 'eval.run_started' | 'eval.run_graded' | 'eval.finished';
  data: Record<string, unknown>;
}

/** A stored event: its number, type, time (ISO 8601) and data as JSON text. */
export interface EvalEventRow {
  seq: number;
  type: string;
  at: string;
  data: string;
}

/** The event that ends an eval's stream. */
export const FINAL_EVAL_EVENT = 'eval.finished';

/** What a driver writes of one case's run once it is graded (the row's `criteria` and outcome), and what the judging spent. */
export interface GradedRun {
  ordinal: number;
  result: EvalCaseResult;
  judgeCredits: number;
}

/** An eval a driver claimed: its id and workspace. */
export interface ClaimedEval {
  id: string;
  workspaceId: string;
}

export interface EvalRepository {
  /**
   * The eval, its rows and its reservation, in one transaction: the reservation is a conditional
   * debit of the workspace's balance (never below zero); when it cannot be taken nothing is written
   * (`balance`: the balance then).
   */
  create(evalRun: NewEval): Promise<CreateEvalOutcome>;
  /** The eval with its rows, or null when the workspace has none of that id. */
  find(workspaceId: string, id: string): Promise<EvalRecord | null>;
  /** The agent's evals, newest first (by creation, then id), after the keyset `before` ({created_at, id}), at most `limit`. */
  list(workspaceId: string, agentId: string, before: { createdAt: string; id: string } | null, limit: number): Promise<EvalListItem[]>;
  /**
   * Evals that are not finished and whose lease ran out (or never had one), claimed for `lease`
   * (at most `limit`): each claim a conditional write, so of two processes one gets an eval.
   */
  claimDue(lease: Lease, limit: number): Promise<ClaimedEval[]>;
  /** Holds the lease on until `untilMs` (a long pass renews it as it goes); false when it was lost. */
  renew(id: string, owner: string, untilMs: number): Promise<boolean>;
  /** Releases the lease early so another pass (any process) may take the eval up at `nextAt` (ms); false when the lease was lost. */
  release(id: string, owner: string, nextAtMs: number): Promise<boolean>;
  /**
   * Records the run of row `ordinal` (when the row has none), marks the eval running, appends the
   * event, and moves `release` of the credits it holds back to the workspace's balance (the run is
   * about to reserve them; nothing moves when it holds less), in one write under the lease; false
   * when the lease was lost or the row had its run (nothing written). Once per row, so a driver
   * that stops before accepting the run never releases its credits twice.
   */
  recordRun(id: string, owner: string, ordinal: number, runId: string, event: EvalEventInput, release: number): Promise<boolean>;
  /**
   * Records graded rows, the judge credits they spent (taken from what the eval holds), the eval's
   * list item as it now reads and their events, in one write under the lease; false when the lease was lost.
   */
  recordGrades(id: string, owner: string, graded: GradedRun[], item: EvalListItem, events: EvalEventInput[]): Promise<boolean>;
  /**
   * Ends the eval (`finished` or `failed`: its final list item says which, with its summary and gate
   * result) and gives what it still holds back to the workspace's balance, in one write under the
   * lease; false when the lease was lost.
   */
  finish(id: string, owner: string, item: EvalListItem, event: EvalEventInput): Promise<boolean>;
  /** The eval's events numbered above `after`, in order, at most `limit`. */
  events(id: string, after: number, limit: number): Promise<EvalEventRow[]>;
  /** The eval's last event, or null (an eval that is gone). */
  lastEvent(id: string): Promise<EvalEventRow | null>;
  /** Deletes evals that ended before `beforeIso` (and their rows), at most `limit`; how many. */
  prune(beforeIso: string, limit: number): Promise<number>;
}
