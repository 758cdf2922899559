// The schedules rows on PostgreSQL: kept in step with the documents that
// declare them inside each write's transaction, read by the schedulers of every replica when due,
// and moved forward by the conditional advance of schedule-writes.ts.
import type { DeclaredSchedule } from '../../domain/triggers';
import type { FireRecord, ScheduleRepository, ScheduleRow } from '../port';
import { schedulePlan } from '../shared/schedules';
import { DUE_FAIRLY, numbered } from '../shared/statements';
import type { PgDatabase, Sql } from './database';
import { claimSchedule } from './schedule-writes';
import { bumpPollStatus, statusVersions } from './trigger-status';

/**
 * Keeps an owner's schedule rows equal to what its document declares (see schedulePlan). Runs
 * inside the document's write, which holds the document's row, so no other write of this owner runs beside it.
 */
export async function syncSchedules(sql: Sql, workspaceId: string, ownerId: string, declared: DeclaredSchedule[], nowMs: number): Promise<void> {
  // FOR UPDATE: a scheduler advancing one of these rows now waits for this write, and one that
  // advanced it first is seen here, so an unchanged schedule's kept due time is never an old one.
  const rows = await sql.rows<ScheduleRow>('SELECT * FROM schedules WHERE owner_id = $1 ORDER BY id FOR UPDATE', [ownerId]);
  const plan = schedulePlan(rows, declared, nowMs);
  for (const { declared: d, next, exists } of plan.writes) {
    if (exists) await updateSchedule(sql, d, next);
    else await insertSchedule(sql, workspaceId, ownerId, d, next);
  }
  if (plan.removed.length) {
    // A schedule's fire records go with it.
    await sql.count('DELETE FROM schedules WHERE id = ANY($1::text[])', [plan.removed]);
    await sql.count('DELETE FROM schedule_fires WHERE schedule_id = ANY($1::text[])', [plan.removed]);
  }
}

/** Deletes an owner's schedules and their fire records (with the owner, in its transaction). */
export async function removeSchedules(sql: Sql, ownerId: string): Promise<void> {
  await sql.count('WITH gone AS (DELETE FROM schedules WHERE owner_id = $1 RETURNING id) DELETE FROM schedule_fires WHERE schedule_id IN (SELECT id FROM gone)', [ownerId]);
}

async function insertSchedule(sql: Sql, workspaceId: string, ownerId: string, d: DeclaredSchedule, next: number | null): Promise<void> {
  await sql.count(
    `INSERT INTO schedules (id, kind, workspace_id, owner_id, trigger_id, cron, timezone, active, next_due_at, detector)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [d.id, d.kind, workspaceId, ownerId, d.triggerId, d.cron, d.timezone, d.active ? 1 : 0, next, d.detector],
  );
}

async function updateSchedule(sql: Sql, d: DeclaredSchedule, next: number | null): Promise<void> {
  // Every SET expression reads the old row: a new detector forgets the old one's output and failures.
  await sql.count(
    `UPDATE schedules SET cron = $2, timezone = $3, active = $4, next_due_at = $5,
       last_output_hash = CASE WHEN detector IS NOT DISTINCT FROM $6 THEN last_output_hash END,
       failures = CASE WHEN detector IS NOT DISTINCT FROM $6 AND cron = $2 AND timezone = $3 THEN failures ELSE 0 END,
       last_error = CASE WHEN detector IS NOT DISTINCT FROM $6 AND cron = $2 AND timezone = $3 THEN last_error END,
       detector = $6
     WHERE id = $1`,
    [d.id, d.cron, d.timezone, d.active ? 1 : 0, next, d.detector],
  );
}

const dueFairly = numbered(DUE_FAIRLY);

export function pgScheduleRepository(db: PgDatabase): ScheduleRepository {
  return {
    statusVersion: statusVersions(db),
    due: (nowMs, limit, perWorkspace) => db.rows<ScheduleRow>(dueFairly.text, dueFairly.values({ now: nowMs, perWorkspace, limit })),
    find: async (id) => (await db.row<ScheduleRow>('SELECT * FROM schedules WHERE id = $1', [id])) ?? null,
    ofOwner: (ownerId) => db.rows<ScheduleRow>('SELECT * FROM schedules WHERE owner_id = $1 ORDER BY id', [ownerId]),
    // The scheduler's own writes, acknowledged once visible (as with SQLite).
    advance: (claim) => db.transaction((sql) => claimSchedule(sql, claim, new Date().toISOString()), { ack: 'visible' }),
    fires: (id) => db.rows<FireRecord>('SELECT due_at, outcome, run_id, detail FROM schedule_fires WHERE schedule_id = $1 ORDER BY due_at', [id]),
    recordPoll: (id, dueAt, outcome) =>
      db.transaction(async (sql) => {
        // Only the fire row still `polling` takes the outcome; the schedule's counters move either way, as in SQLite.
        const setFire = 'UPDATE schedule_fires SET outcome = $1, detail = $2 WHERE schedule_id = $3 AND due_at = $4 AND outcome = $5';
        if (outcome.kind === 'failed') {
          await sql.count(setFire, ['failed', outcome.error, id, dueAt, 'polling']);
          await sql.count(
            `UPDATE schedules SET failures = failures + 1, last_error = $2,
               next_due_at = CASE WHEN next_due_at IS NOT NULL AND next_due_at < $3 THEN $3 ELSE next_due_at END
             WHERE id = $1`,
            [id, outcome.error, outcome.retryAt],
          );
        } else {
          await sql.count(setFire, [outcome.kind, null, id, dueAt, 'polling']);
          await sql.count('UPDATE schedules SET failures = 0, last_error = NULL, last_output_hash = $2 WHERE id = $1', [id, outcome.hash]);
        }
        await bumpPollStatus(sql, id);
      }, { ack: 'visible' }),
  };
}
