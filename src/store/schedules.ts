// The schedules rows: kept in step with the documents that declare them (inside each write's
// transaction), read by the scheduler when due, and moved forward by a conditional UPDATE whose
// affected-row count decides which process handles a due time. A due time's outcome is a row of
// schedule_fires keyed (schedule, due time).
import type { Db } from './db';
import type { GroupCommit } from './group-commit';
import { nextDueAfter } from '../domain/schedule';
import type { DeclaredSchedule, ScheduleKind } from '../domain/triggers';
import { triggerStatusVersions } from './trigger-status';

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
 * The due schedules, a fair share of each workspace: ranked within their workspace by due time, and
 * taken rank by rank (every workspace's soonest, then every workspace's second, …), so one workspace
 * with hundreds due cannot push another's past this tick. Named parameters @now, @perWorkspace,
 * @limit (PostgreSQL's adapter numbers them).
 */
export const DUE_FAIRLY = `SELECT * FROM (
    SELECT s.*, row_number() OVER (PARTITION BY workspace_id ORDER BY next_due_at, id) AS rank
    FROM schedules s WHERE next_due_at IS NOT NULL AND next_due_at <= @now) AS ranked
  WHERE rank <= @perWorkspace ORDER BY rank, next_due_at, id LIMIT @limit`;

/**
 * Fire rows kept per schedule: the write that records a due time deletes the schedule's older ones,
 * so the table holds at most this many per schedule (migration 012 applied it to older rows).
 */
export const FIRES_KEPT = 100;

/** The writes a claim makes, shared by the schedule repository and the runs' accept (a fire lands with its run). */
export function scheduleWrites(db: Db, commit: GroupCommit) {
  const versions = triggerStatusVersions(db, commit);
  const advance = db.prepare('UPDATE schedules SET next_due_at = @next WHERE id = @id AND next_due_at = @expected');
  const insertFire = db.prepare('INSERT INTO schedule_fires (schedule_id, due_at, outcome, run_id, detail, recorded_at) VALUES (?, ?, ?, ?, ?, ?)');
  // A poll's due time has its row already (outcome `polling`): the run's outcome replaces it.
  const recordFire = db.prepare(
    `INSERT INTO schedule_fires (schedule_id, due_at, outcome, run_id, detail, recorded_at) VALUES (@id, @due, @outcome, @run, @detail, @now)
     ON CONFLICT (schedule_id, due_at) DO UPDATE SET outcome = excluded.outcome, run_id = excluded.run_id, detail = excluded.detail
     WHERE schedule_fires.outcome = 'polling'`,
  );
  const markFired = db.prepare('UPDATE schedules SET last_fired_at = @at, last_run_id = @run WHERE id = @id');
  const trimFires = db.prepare(
    `DELETE FROM schedule_fires WHERE schedule_id = @id
       AND due_at < (SELECT due_at FROM schedule_fires WHERE schedule_id = @id ORDER BY due_at DESC LIMIT 1 OFFSET ${FIRES_KEPT - 1})`,
  );
  const pollChanged = db.prepare('UPDATE schedules SET last_output_hash = @hash, failures = 0, last_error = NULL WHERE id = @id AND last_output_hash IS @seen');
  return {
    /** Moves the schedule on and records its decisions; false, writing nothing, when another process moved it first. */
    claim(claim: ScheduleClaim, now: string): boolean {
      if (advance.run({ id: claim.id, expected: claim.expectedDue, next: claim.next }).changes !== 1) return false;
      for (const f of claim.fires) insertFire.run(claim.id, f.dueAt, f.outcome, f.runId ?? null, f.detail ?? null, now);
      trimFires.run({ id: claim.id }); // before the fire this claim may add: at most FIRES_KEPT + 1
      versions.bumpPoll(claim.id); // a poll's next_fire_at moved
      return true;
    },
    /** The first half of a scheduled run's write: false, writing nothing, when another process decided this due time or output first. */
    take(fire: ScheduledFire, now: string): boolean {
      if (fire.kind === 'schedule') return this.claim(fire.claim, now);
      return pollChanged.run({ id: fire.scheduleId, hash: fire.newHash, seen: fire.seenHash }).changes === 1;
    },
    /** The second half: the due time is recorded as fired (or refused) with its run, and noted on the schedule. */
    fired(fire: ScheduledFire, outcome: 'fired' | 'refused', runId: string, detail: string | null, now: string): void {
      const id = fire.kind === 'schedule' ? fire.claim.id : fire.scheduleId;
      if (recordFire.run({ id, due: fire.dueAt, outcome, run: runId, detail, now }).changes !== 1) {
        throw new Error(`schedule ${id}: due time ${fire.dueAt} was recorded already`); // rolls the run back with it
      }
      markFired.run({ id, at: now, run: runId });
    },
  };
}

/**
 * Keeps an owner's schedule rows equal to what its document declares, inside the document's write:
 * new ones get their next due time after `nowMs`, gone ones are deleted, changed ones (expression,
 * zone, detector, or whether they fire) start again from `nowMs`; an unchanged one keeps its next
 * due time (a replace that does not touch the schedule does not move it).
 */
export function scheduleSync(db: Db) {
  const ofOwner = db.prepare('SELECT * FROM schedules WHERE owner_id = ?');
  const insert = db.prepare(
    `INSERT INTO schedules (id, kind, workspace_id, owner_id, trigger_id, cron, timezone, active, next_due_at, detector)
     VALUES (@id, @kind, @workspace, @owner, @trigger, @cron, @timezone, @active, @next, @detector)`,
  );
  // Every SET expression reads the old row: a new detector forgets the old one's output and failures.
  const update = db.prepare(
    `UPDATE schedules SET cron = @cron, timezone = @timezone, active = @active, next_due_at = @next,
       last_output_hash = CASE WHEN detector IS @detector THEN last_output_hash END,
       failures = CASE WHEN detector IS @detector AND cron = @cron AND timezone = @timezone THEN failures ELSE 0 END,
       last_error = CASE WHEN detector IS @detector AND cron = @cron AND timezone = @timezone THEN last_error END,
       detector = @detector
     WHERE id = @id`,
  );
  // A schedule's fire records go with it.
  const remove = db.prepare('DELETE FROM schedules WHERE id = ?');
  const removeFires = db.prepare('DELETE FROM schedule_fires WHERE schedule_id = ?');
  const removeOwner = db.prepare('DELETE FROM schedules WHERE owner_id = ? RETURNING id').pluck();
  return {
    sync(workspaceId: string, ownerId: string, declared: DeclaredSchedule[], nowMs: number): void {
      const existing = new Map((ofOwner.all(ownerId) as ScheduleRow[]).map((row) => [row.id, row]));
      for (const d of declared) {
        const row = existing.get(d.id);
        existing.delete(d.id);
        const unchanged = row && row.active === 1 && d.active && row.cron === d.cron && row.timezone === d.timezone && row.next_due_at !== null;
        const next = unchanged ? row.next_due_at : d.active ? nextDueAfter(d.cron, d.timezone, nowMs) : null;
        const values = { id: d.id, cron: d.cron, timezone: d.timezone, active: d.active ? 1 : 0, next, detector: d.detector };
        if (row) update.run(values);
        else insert.run({ ...values, kind: d.kind, workspace: workspaceId, owner: ownerId, trigger: d.triggerId });
      }
      for (const id of existing.keys()) {
        remove.run(id);
        removeFires.run(id);
      }
    },
    removeOwner(ownerId: string): void {
      for (const id of removeOwner.all(ownerId) as string[]) removeFires.run(id);
    },
  };
}

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
  recordPoll(id: string, dueAt: number, outcome: { kind: 'failed'; error: string; retryAt: number } | { kind: 'baseline' | 'unchanged'; hash: string }): Promise<void>;
}

export function scheduleRepository(db: Db, commit: GroupCommit): ScheduleRepository {
  const due = db.prepare(DUE_FAIRLY);
  const byId = db.prepare('SELECT * FROM schedules WHERE id = ?');
  const byOwner = db.prepare('SELECT * FROM schedules WHERE owner_id = ? ORDER BY id');
  const fires = db.prepare('SELECT due_at, outcome, run_id, detail FROM schedule_fires WHERE schedule_id = ? ORDER BY due_at');
  const setFire = db.prepare('UPDATE schedule_fires SET outcome = ?, detail = ? WHERE schedule_id = ? AND due_at = ? AND outcome = ?');
  const pollFailed = db.prepare(
    `UPDATE schedules SET failures = failures + 1, last_error = @error,
       next_due_at = CASE WHEN next_due_at IS NOT NULL AND next_due_at < @retry THEN @retry ELSE next_due_at END
     WHERE id = @id`,
  );
  const pollSeen = db.prepare('UPDATE schedules SET failures = 0, last_error = NULL, last_output_hash = @hash WHERE id = @id');
  const writes = scheduleWrites(db, commit);
  const versions = triggerStatusVersions(db, commit);
  return {
    statusVersion: async (agentId) => versions.current(agentId),
    due: async (nowMs, limit, perWorkspace) => due.all({ now: nowMs, limit, perWorkspace }) as ScheduleRow[],
    find: async (id) => (byId.get(id) as ScheduleRow | undefined) ?? null,
    ofOwner: async (ownerId) => byOwner.all(ownerId) as ScheduleRow[],
    advance: (claim) => commit.run(() => writes.claim(claim, new Date().toISOString()), 'visible'),
    fires: async (id) => fires.all(id) as FireRecord[],
    recordPoll: (id, dueAt, outcome) =>
      commit.run(() => {
        if (outcome.kind === 'failed') {
          setFire.run('failed', outcome.error, id, dueAt, 'polling');
          pollFailed.run({ id, error: outcome.error, retry: outcome.retryAt });
        } else {
          setFire.run(outcome.kind, null, id, dueAt, 'polling');
          pollSeen.run({ id, hash: outcome.hash });
        }
        versions.bumpPoll(id);
      }, 'visible'),
  };
}
