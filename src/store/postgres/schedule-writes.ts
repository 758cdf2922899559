// The writes a schedule's due time makes (as scheduleWrites in sqlite/schedules.ts), shared by the
// schedule repository and the runs' accept (a fire lands with its run). Which replica handles a
// due time is decided by the conditional advance: under READ COMMITTED a second UPDATE of the row
// waits for the first to commit, then finds next_due_at moved and changes nothing (0 rows).
import { FIRES_KEPT, type ScheduleClaim, type ScheduledFire } from '../port';
import type { Sql } from './database';
import { bumpPollStatus } from './trigger-status';

/** Moves the schedule on and records its decisions; false, writing nothing, when another process moved it first. */
export async function claimSchedule(sql: Sql, claim: ScheduleClaim, now: string): Promise<boolean> {
  const moved = await sql.count('UPDATE schedules SET next_due_at = $1 WHERE id = $2 AND next_due_at = $3', [claim.next, claim.id, claim.expectedDue]);
  if (moved !== 1) return false;
  for (const f of claim.fires) {
    await sql.count('INSERT INTO schedule_fires (schedule_id, due_at, outcome, run_id, detail, recorded_at) VALUES ($1, $2, $3, $4, $5, $6)', [
      claim.id,
      f.dueAt,
      f.outcome,
      f.runId ?? null,
      f.detail ?? null,
      now,
    ]);
  }
  // Before the fire this claim may add: at most FIRES_KEPT + 1 rows per schedule.
  await sql.count(
    `DELETE FROM schedule_fires WHERE schedule_id = $1
       AND due_at < (SELECT due_at FROM schedule_fires WHERE schedule_id = $1 ORDER BY due_at DESC LIMIT 1 OFFSET ${FIRES_KEPT - 1})`,
    [claim.id],
  );
  await bumpPollStatus(sql, claim.id); // a poll's next_fire_at moved
  return true;
}

/** The first half of a scheduled run's write: false, writing nothing, when another process decided this due time or output first. */
export async function takeFire(sql: Sql, fire: ScheduledFire, now: string): Promise<boolean> {
  if (fire.kind === 'schedule') return claimSchedule(sql, fire.claim, now);
  const changed = await sql.count(
    'UPDATE schedules SET last_output_hash = $1, failures = 0, last_error = NULL WHERE id = $2 AND last_output_hash IS NOT DISTINCT FROM $3',
    [fire.newHash, fire.scheduleId, fire.seenHash],
  );
  return changed === 1;
}

/** The second half: the due time is recorded as fired (or refused) with its run, and noted on the schedule. */
export async function recordFired(sql: Sql, fire: ScheduledFire, outcome: 'fired' | 'refused', runId: string, detail: string | null, now: string): Promise<void> {
  const id = fire.kind === 'schedule' ? fire.claim.id : fire.scheduleId;
  // A poll's due time has its row already (outcome `polling`): the run's outcome replaces it.
  const recorded = await sql.count(
    `INSERT INTO schedule_fires (schedule_id, due_at, outcome, run_id, detail, recorded_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (schedule_id, due_at) DO UPDATE SET outcome = excluded.outcome, run_id = excluded.run_id, detail = excluded.detail
     WHERE schedule_fires.outcome = 'polling'`,
    [id, fire.dueAt, outcome, runId, detail, now],
  );
  if (recorded !== 1) throw new Error(`schedule ${id}: due time ${fire.dueAt} was recorded already`); // rolls the run back with it
  await sql.count('UPDATE schedules SET last_fired_at = $1, last_run_id = $2 WHERE id = $3', [now, runId, id]);
}
