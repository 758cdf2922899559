// How an owner's schedule rows follow what its document declares. The SQLite adapter reads the
// rows and runs these writes inside the document's write; the PostgreSQL adapter states the same
// rule in SQL, in the write's statement (postgres/document-writes.ts): a change here goes there too.
import { nextDueAfter } from '../../domain/schedule';
import type { DeclaredSchedule } from '../../domain/triggers';
import type { ScheduleRow } from '../port';

export interface ScheduleWrite {
  declared: DeclaredSchedule;
  /** The next due time to store: kept for an unchanged schedule, else the next after now (null when inactive). */
  next: number | null;
  /** Whether the row exists (an update) or not (an insert). */
  exists: boolean;
}

/**
 * Keeps an owner's schedule rows equal to what its document declares: new ones get their next due
 * time after `nowMs`, gone ones are deleted (with their fire records), changed ones (expression,
 * zone, or whether they fire) start again from `nowMs`; an unchanged one keeps its next due time (a
 * replace that does not touch the schedule does not move it, nor writes it). A changed detector is the update's
 * concern: its SQL forgets the old detector's output and failures.
 */
const stores = (row: ScheduleRow, d: DeclaredSchedule, next: number | null): boolean =>
  row.cron === d.cron && row.timezone === d.timezone && row.active === (d.active ? 1 : 0) && row.next_due_at === next && row.detector === d.detector;

export function schedulePlan(
  existing: readonly ScheduleRow[],
  declared: readonly DeclaredSchedule[],
  nowMs: number,
): { writes: ScheduleWrite[]; removed: string[] } {
  const rows = new Map(existing.map((row) => [row.id, row]));
  const writes: ScheduleWrite[] = [];
  for (const d of declared) {
    const row = rows.get(d.id);
    rows.delete(d.id);
    const unchanged = row && row.active === 1 && d.active && row.cron === d.cron && row.timezone === d.timezone && row.next_due_at !== null;
    const next = unchanged ? row.next_due_at : d.active ? nextDueAfter(d.cron, d.timezone, nowMs) : null;
    // A row that already holds every value the write would set is left as it is (most replaces
    // change no schedule: a statement each saved).
    if (row && stores(row, d, next)) continue;
    writes.push({ declared: d, next, exists: row !== undefined });
  }
  return { writes, removed: [...rows.keys()] };
}
