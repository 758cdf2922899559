// The schedules of agents and workflows as the scheduler sees them: due rows, the claim of a due
// time, the fires recorded, and the run a due time starts.
import type { ScheduleKind } from '../../domain/triggers';

export interface ScheduleRow {
  id: string;
  kind: ScheduleKind;
  workspace_id: string;
  owner_id: string;
  trigger_id: string | null;
  cron: string;
  timezone: string;
  active: number;
  next_due_at: number | null;
  detector: string | null;
  last_output_hash: string | null;
  last_fired_at: string | null;
  last_run_id: string | null;
  last_error: string | null;
  failures: number;
}

export type FireOutcome = 'fired' | 'refused' | 'missed' | 'overlap' | 'failed' | 'polling' | 'baseline' | 'unchanged';

export interface FireRow {
  dueAt: number;
  outcome: FireOutcome;
  runId?: string | null;
  detail?: string | null;
}

/** A scheduler's decision about the due time it read: the schedule moves from `expectedDue` to `next`, and `fires` are recorded. */
export interface ScheduleClaim {
  id: string;
  expectedDue: number;
  next: number | null;
  fires: FireRow[];
}

/**
 * A run a schedule starts, written with it (runs.ts: accept): `schedule` claims the due time (the
 * conditional advance) and records it fired; `poll` records the detector's new output, if the seen
 * one is still the stored one, and its `polling` fire row as fired.
 */
export type ScheduledFire =
  | { kind: 'schedule'; claim: ScheduleClaim; dueAt: number }
  | { kind: 'poll'; scheduleId: string; dueAt: number; seenHash: string | null; newHash: string };

/**
 * Fire rows kept per schedule: the write that records a due time deletes the schedule's older ones,
 * so the table holds at most this many per schedule (migration 012 applied it to older rows).
 */
export const FIRES_KEPT = 100;

export interface FireRecord {
  due_at: number;
  outcome: FireOutcome;
  run_id: string | null;
  detail: string | null;
}

export interface ScheduleRepository {
  /**
   * Active schedules whose next due time has come, served fairly across workspaces: at most
   * `perWorkspace` of each workspace, each workspace's soonest before any workspace's second, at most
   * `limit` in all.
   */
  due(nowMs: number, limit: number, perWorkspace: number): Promise<ScheduleRow[]>;
  find(id: string): Promise<ScheduleRow | null>;
  /** An owner's schedules (an agent's own and its polls, or a workflow's). */
  ofOwner(ownerId: string): Promise<ScheduleRow[]>;
  /** Moves the schedule on and records `fires` (no run); false when another process moved it first. */
  advance(claim: ScheduleClaim): Promise<boolean>;
  /** The recorded outcomes of a schedule's due times, oldest first. */
  fires(id: string): Promise<FireRecord[]>;
  /** The agent's trigger status version: it changes whenever its triggers' live status does. */
  statusVersion(agentId: string): Promise<number>;
  /**
   * The outcome of a poll's detector at `dueAt` (its fire row says `polling` until then): `failed`
   * (with the error; the next due time moves to `retryAt` at the earliest), `baseline` or `unchanged`.
   */
  recordPoll(
    id: string,
    dueAt: number,
    outcome: { kind: 'failed'; error: string; retryAt: number } | { kind: 'baseline' | 'unchanged'; hash: string },
  ): Promise<void>;
}
