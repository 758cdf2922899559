// The writes a schedule's due time makes (as scheduleWrites in sqlite/schedules.ts), shared by the
// schedule repository and the runs' accept (a fire lands with its run). Which replica handles a
// due time is decided by the conditional advance: under READ COMMITTED a second UPDATE of the row
// waits for the first to commit, then finds next_due_at moved and changes nothing (0 rows).
import type { ScheduleClaim, ScheduledFire } from '../port';
import { ADVANCE_SCHEDULE, INSERT_FIRE, MARK_FIRED, numbered, RECORD_FIRE, TRIM_FIRES } from '../shared/statements';
import type { Sql } from './database';
import { bumpPollStatus } from './trigger-status';

const advance = numbered(ADVANCE_SCHEDULE);
const insertFire = numbered(INSERT_FIRE);
const recordFire = numbered(RECORD_FIRE);
const markFired = numbered(MARK_FIRED);
const trimFires = numbered(TRIM_FIRES);

/** Moves the schedule on and records its decisions; false, writing nothing, when another process moved it first. */
export async function claimSchedule(sql: Sql, claim: ScheduleClaim, now: string): Promise<boolean> {
  if ((await sql.count(advance.text, advance.values({ id: claim.id, expected: claim.expectedDue, next: claim.next }))) !== 1) return false;
  for (const f of claim.fires) {
    await sql.count(
      insertFire.text,
      insertFire.values({ id: claim.id, due: f.dueAt, outcome: f.outcome, run: f.runId ?? null, detail: f.detail ?? null, now }),
    );
  }
  await sql.count(trimFires.text, trimFires.values({ id: claim.id })); // before the fire this claim may add
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
export async function recordFired(
  sql: Sql,
  fire: ScheduledFire,
  outcome: 'fired' | 'refused',
  runId: string,
  detail: string | null,
  now: string,
): Promise<void> {
  const id = fire.kind === 'schedule' ? fire.claim.id : fire.scheduleId;
  if ((await sql.count(recordFire.text, recordFire.values({ id, due: fire.dueAt, outcome, run: runId, detail, now }))) !== 1) {
    throw new Error(`schedule ${id}: due time ${fire.dueAt} was recorded already`); // rolls the run back with it
  }
  await sql.count(markFired.text, markFired.values({ id, now, run: runId }));
}
