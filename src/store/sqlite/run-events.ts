// A run's events: one row per state change, numbered from 1 per run, appended inside the
// transaction of the change they report (so an event exists exactly when its change committed) and
// read back by the event stream after the last number a client saw.
import { FINAL_EVENT, RUN_EVENTS_LIMIT, type RunEventInput, type RunEventRow } from '../port';
import type { Db } from './database';

export function runEventWrites(db: Db, limit = RUN_EVENTS_LIMIT) {
  // The run's last number: numbers are dense from 1, so it is also how many events the run has.
  // Inside the write's transaction no other write of the run's events interleaves.
  const last = db.prepare('SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = ?').pluck();
  // All the events of one write in one statement (one JSON array, numbered from @base + 1): a run
  // writes events with every step, and a statement per event is a run's largest avoidable cost.
  const insertAll = db.prepare(
    `INSERT INTO run_events (run_id, seq, type, data, at)
     SELECT @run, @base + key + 1, value ->> '$.type', value -> '$.data', value ->> '$.at' FROM json_each(@events)`,
  );
  // One event (a run queued, claimed, parked, ended): numbered and limited by the same statement.
  const insertOne = db.prepare(
    `INSERT INTO run_events (run_id, seq, type, data, at)
     SELECT @run, COALESCE(MAX(seq), 0) + 1, @type, @data, @at FROM run_events WHERE run_id = @run
     HAVING COALESCE(MAX(seq), 0) < @limit OR @type = '${FINAL_EVENT}'`,
  );
  const after = db.prepare('SELECT seq, type, data, at FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT CAST(? AS INTEGER)');
  const lastOf = db.prepare('SELECT seq, type FROM run_events WHERE run_id = ? ORDER BY seq DESC LIMIT 1');
  const removeOf = db.prepare('DELETE FROM run_events WHERE run_id = ?');
  return {
    /** Appends events to a run's stream (inside the caller's transaction); beyond the limit, only a final one. */
    append(runId: string, events: readonly RunEventInput[], now: string): void {
      if (!events.length) return;
      if (events.length === 1) {
        const [event] = events as [RunEventInput];
        insertOne.run({ run: runId, type: event.type, data: JSON.stringify(event.data), at: event.at ?? now, limit });
        return;
      }
      const base = last.get(runId) as number;
      const room = limit - base;
      const kept =
        events.length <= room ? events : [...events.slice(0, Math.max(0, room)), ...events.slice(Math.max(0, room)).filter((e) => e.type === FINAL_EVENT)];
      if (!kept.length) return;
      insertAll.run({ run: runId, base, events: JSON.stringify(kept.map((e) => ({ type: e.type, data: e.data, at: e.at ?? now }))) });
    },
    /** A run's events after `seq`, oldest first, at most `max`. */
    after(runId: string, seq: number, max: number): RunEventRow[] {
      return after.all(runId, seq, max) as RunEventRow[];
    },
    /** A run's last event's number and type, or null. */
    last(runId: string): { seq: number; type: string } | null {
      return (lastOf.get(runId) as { seq: number; type: string } | undefined) ?? null;
    },
    remove(runId: string): void {
      removeOf.run(runId);
    },
  };
}

export type RunEventWrites = ReturnType<typeof runEventWrites>;
