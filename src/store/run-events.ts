// A run's events: one row per state change, numbered from 1 per run, appended inside the
// transaction of the change they report (so an event exists exactly when its change committed) and
// read back by the event stream after the last number a client saw.
import type { Db } from './db';

/** Events kept per run, at most: beyond, only a run's final event is stored. */
export const RUN_EVENTS_LIMIT = 1000;

/** The type of a run's last event: after it the stream ends. */
export const FINAL_EVENT = 'run.finished';

export interface RunEventInput {
  type: string;
  data: Record<string, unknown>;
  /** When it happened (ISO 8601); the write's time when absent. */
  at?: string;
}

export interface RunEventRow {
  seq: number;
  type: string;
  /** The event's data, as JSON text. */
  data: string;
  at: string;
}

export function runEventWrites(db: Db, limit = RUN_EVENTS_LIMIT) {
  // The next number is one past the run's last (numbers are dense: the primary key's last entry is
  // the count). Inside the write's transaction no other write of the run's events interleaves.
  const append = db.prepare(
    `INSERT INTO run_events (run_id, seq, type, data, at)
     SELECT @run, COALESCE(MAX(seq), 0) + 1, @type, @data, @at FROM run_events WHERE run_id = @run
     HAVING COALESCE(MAX(seq), 0) < @limit OR @type = '${FINAL_EVENT}'`,
  );
  const after = db.prepare('SELECT seq, type, data, at FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?');
  const removeOf = db.prepare('DELETE FROM run_events WHERE run_id = ?');
  return {
    /** Appends events to a run's stream (inside the caller's transaction). */
    append(runId: string, events: readonly RunEventInput[], now: string): void {
      for (const event of events) append.run({ run: runId, type: event.type, data: JSON.stringify(event.data), at: event.at ?? now, limit });
    },
    /** A run's events after `seq`, oldest first, at most `max`. */
    after(runId: string, seq: number, max: number): RunEventRow[] {
      return after.all(runId, seq, max) as RunEventRow[];
    },
    remove(runId: string): void {
      removeOf.run(runId);
    },
  };
}

export type RunEventWrites = ReturnType<typeof runEventWrites>;
