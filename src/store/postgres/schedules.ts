// The schedules rows on PostgreSQL: kept in step with the documents that declare them by each
// write's statement (document-writes.ts), read by the schedulers of every replica when due, and
// moved forward by the conditional advance of schedule-writes.ts.
import type { FireRecord, ScheduleRepository, ScheduleRow } from '../port';
import { DUE_FAIRLY, numbered } from '../shared/statements';
import type { PgDatabase } from './database';
import { claimSchedule } from './schedule-writes';
import { bumpPollStatus, statusVersions } from './trigger-status';

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
      db.transaction(
        async (sql) => {
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
        },
        { ack: 'visible' },
      ),
  };
}
