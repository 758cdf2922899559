// What one executing run spends and how far it got, kept in memory and saved without holding the
// run up. Steps are charged against the run's reservation in memory; beyond it, each is reserved
// from the workspace's balance at once (a conditional debit: never below zero). The count is saved
// with the run's progress and its end; a run that a stop interrupts is refunded what it reserved
// beyond what was saved. Progress is saved at most every PROGRESS_INTERVAL_MS (a run that ends
// sooner writes only its end), and at most one progress write is queued at a time: it writes the
// latest state when its group commits, and the group commit keeps order, so the end always lands
// after it.
import { withoutNul } from '../../domain/json-limits';
import type { Logger } from '../../log';
import type { RunEventInput, RunProgress } from '../../store/port';
import type { AgentOutcome } from '../agent-loop';
import type { QueuedRun } from './queued-run';

/** How often a running run's progress is saved for its pollers, at most. */
export const PROGRESS_INTERVAL_MS = 100;

/** How long a parked run waits for its held calls to be decided, by default. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 24 * 3600_000;

export interface LedgerOptions {
  runs: RunProgress;
  logger: Logger;
  /** How long a parked run waits for its held calls to be decided (default DEFAULT_APPROVAL_TIMEOUT_MS). */
  approvalTimeoutMs?: number;
}

export type RunEnding = { status: 'succeeded' | 'failed' | 'cancelled'; error: string | null; state: unknown };

export interface CreditLedger {
  /** Asks the run to stop before its next step. */
  stop(): void;
  /** Whether the run should stop: asked to here, or a save found a cancel in its row (or the run ended by another path). */
  shouldStop(): boolean;
  /** Records an event; it is saved with the next progress save, or with the end. */
  emit(type: string, data: Record<string, unknown>): void;
  /** Pays for one step: from the reservation, or reserved from the workspace's balance now. False when the balance cannot. */
  charge(): Promise<boolean>;
  /** The run's latest state: saved soon (see PROGRESS_INTERVAL_MS). */
  progress(state: unknown): Promise<void>;
  /** Records the run's end with what it spent and the events not saved yet. */
  finish(outcome: RunEnding): Promise<boolean>;
  /** Parks the run for approval; a cancel that came first ends it cancelled instead. */
  park(outcome: Extract<AgentOutcome, { status: 'awaiting_approval' }>): Promise<void>;
}

const now = () => new Date().toISOString();

export function createCreditLedger(run: QueuedRun, opts: LedgerOptions): CreditLedger {
  const { runs, logger } = opts;
  const approvalTimeoutMs = opts.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
  let reserved = run.creditsReserved;
  let spent = run.creditsSpent;
  let latest: unknown = run.state;
  let queued = false;
  let lastSavedAt = performance.now(); // the claim saved the run's initial state
  let timer: NodeJS.Timeout | null = null;
  let stopRequested = false;
  /** Events not saved yet: they go with the next progress save, or with the end. */
  let events: RunEventInput[] = [];
  const takeEvents = () => {
    const taken = events;
    events = [];
    return taken;
  };
  const current = () => {
    queued = false;
    return { state: latest, spent, events: takeEvents() };
  };
  const save = () => {
    timer = null;
    queued = true;
    lastSavedAt = performance.now();
    runs
      .saveState(run.id, current)
      .then((saved) => {
        if (saved !== 'saved') stopRequested = true; // a cancel seen in the row, or ended by another path
      })
      .catch((err: unknown) => logger.error({ err, runId: run.id }, 'could not save the progress of a run'));
  };
  /** Saves soon: now, or PROGRESS_INTERVAL_MS after the last save; one save queued at a time. */
  const scheduleSave = () => {
    if (queued || timer) return;
    const wait = lastSavedAt + PROGRESS_INTERVAL_MS - performance.now();
    if (wait > 0) timer = setTimeout(save, wait).unref();
    else save();
  };
  const stopTimer = () => {
    if (timer) clearTimeout(timer);
    timer = null;
  };
  return {
    stop: () => void (stopRequested = true),
    shouldStop: () => stopRequested,
    emit: (type, data) => {
      events.push({ type, data, at: now() });
      scheduleSave();
    },
    async charge() {
      if (spent >= reserved) {
        if (!(await runs.reserveMore(run.id, 1))) return false;
        reserved++;
      }
      spent++;
      return true;
    },
    async progress(state) {
      latest = state;
      scheduleSave();
    },
    finish: (outcome) => {
      stopTimer();
      return runs.finish(run.id, outcome.status, withoutNul(outcome.error), outcome.state, spent, now(), takeEvents());
    },
    async park(outcome) {
      stopTimer();
      const expiresAt = new Date(Date.now() + approvalTimeoutMs).toISOString();
      const parked = await runs.park(run.id, { state: outcome.state, spent, calls: outcome.held, expiresAt, events: takeEvents() }, now());
      if (parked === 'cancel_requested') await runs.finish(run.id, 'cancelled', null, outcome.state, spent, now());
    },
  };
}
