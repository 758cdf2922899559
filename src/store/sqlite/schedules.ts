// The schedules rows: kept in step with the documents that declare them (inside each write's
// transaction), read by the scheduler when due, and moved forward by a conditional UPDATE whose
// affected-row count decides which process handles a due time. A due time's outcome is a row of
// schedule_fires keyed (schedule, due time).
import type { Db } from './database';
import type { GroupCommit } from './group-commit';
import type { DeclaredSchedule } from '../../domain/triggers';
import type { FireRecord, ScheduleClaim, ScheduledFire, ScheduleRepository, ScheduleRow } from '../port';
import { schedulePlan } from '../shared/schedules';
import { ADVANCE_SCHEDULE, DUE_FAIRLY, INSERT_FIRE, MARK_FIRED, RECORD_FIRE, TRIM_FIRES } from '../shared/statements';
import { triggerStatusVersions } from './trigger-status';

/** The writes a claim makes, shared by the schedule repository and the runs' accept (a fire lands with its run). */
export function scheduleWrites(db: Db, commit: GroupCommit) {
  const versions = triggerStatusVersions(db, commit);
  const advance = db.prepare(ADVANCE_SCHEDULE);
  const insertFire = db.prepare(INSERT_FIRE);
  const recordFire = db.prepare(RECORD_FIRE);
  const markFired = db.prepare(MARK_FIRED);
  const trimFires = db.prepare(TRIM_FIRES);
  const pollChanged = db.prepare('UPDATE schedules SET last_output_hash = @hash, failures = 0, last_error = NULL WHERE id = @id AND last_output_hash IS @seen');
  return {
    /** Moves the schedule on and records its decisions; false, writing nothing, when another process moved it first. */
    claim(claim: ScheduleClaim, now: string): boolean {
      if (advance.run({ id: claim.id, expected: claim.expectedDue, next: claim.next }).changes !== 1) return false;
      for (const f of claim.fires) insertFire.run({ id: claim.id, due: f.dueAt, outcome: f.outcome, run: f.runId ?? null, detail: f.detail ?? null, now });
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
      markFired.run({ id, now, run: runId });
    },
  };
}

/** Keeps an owner's schedule rows equal to what its document declares (see schedulePlan), inside the document's write. */
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
      const plan = schedulePlan(ofOwner.all(ownerId) as ScheduleRow[], declared, nowMs);
      for (const { declared: d, next, exists } of plan.writes) {
        const values = { id: d.id, cron: d.cron, timezone: d.timezone, active: d.active ? 1 : 0, next, detector: d.detector };
        if (exists) update.run(values);
        else insert.run({ ...values, kind: d.kind, workspace: workspaceId, owner: ownerId, trigger: d.triggerId });
      }
      for (const id of plan.removed) {
        remove.run(id);
        removeFires.run(id);
      }
    },
    removeOwner(ownerId: string): void {
      for (const id of removeOwner.all(ownerId) as string[]) removeFires.run(id);
    },
  };
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
