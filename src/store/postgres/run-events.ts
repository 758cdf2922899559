// A run's events in PostgreSQL (as sqlite/run-events.ts): numbered from 1 per run without gaps,
// appended inside the transaction of the change they report, at most RUN_EVENTS_LIMIT per run and
// beyond it only the final event.
//
// The numbering reads the run's last number and writes after it, so two transactions appending to
// one run must not interleave. They do not: every caller appends after the statement that updated
// (and so row-locked) the run's row in the same transaction, or after inserting it (accept), so a
// second appender waits at that statement for the first to commit, and its append, a statement
// begun later, sees the first's events (READ COMMITTED takes a snapshot per statement). The
// primary key (run_id, seq) is the backstop: an append that broke that rule fails rather than
// numbering twice. The claims and a run's end lock the row and append in one statement
// (withEventsAppended): they lean on that backstop, and are sent again when it refused them.
import { FINAL_EVENT, RUN_EVENTS_LIMIT, type RunEventInput, type RunEventRow } from '../port';
import { numbered } from '../shared/statements';
import type { Sql } from './database';

/** The channel on which a write that added events to a run says so: `<instance id>:<run id>`. */
export const RUN_EVENTS_CHANNEL = 'build_run_events';

/** Now by the database's clock, as ISO 8601 UTC text with milliseconds (as Date.toISOString writes it). */
export const DB_NOW = `to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export function pgRunEvents(limit = RUN_EVENTS_LIMIT) {
  // All the events of one write in one statement (withEventsAppended, below), its "write" the run
  // itself: the events without `at` take @now, or the database's clock when it is null.
  const append = numbered(withEventsAppended(`SELECT @run::text AS id, COALESCE(@now::text, ${DB_NOW}) AS at`));
  return {
    /** The most events a run keeps besides its final one. */
    limit,
    /**
     * Appends events to a run's stream inside the caller's transaction, after its statement that
     * locked the run's row (see above); how many were kept (the caller tells of them once committed).
     * An event without `at` takes `now`, or the database's clock when `now` is null.
     */
    async append(sql: Sql, runId: string, events: readonly RunEventInput[], now: string | null): Promise<number> {
      if (!events.length) return 0;
      const row = await sql.row<{ added: number }>(append.text, append.values({ run: runId, now, ...appendedEvents(events, limit) }));
      return row?.added ?? 0;
    },
    /** A run's events after `seq`, oldest first, at most `max`. */
    after(sql: Sql, runId: string, seq: number, max: number): Promise<RunEventRow[]> {
      return sql.rows<RunEventRow>('SELECT seq, type, data, at FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3', [runId, seq, max]);
    },
    /** A run's last event's number and type, or null. */
    async last(sql: Sql, runId: string): Promise<{ seq: number; type: string } | null> {
      return (await sql.row<{ seq: number; type: string }>('SELECT seq, type FROM run_events WHERE run_id = $1 ORDER BY seq DESC LIMIT 1', [runId])) ?? null;
    },
    /** Deletes the events of these runs (inside the caller's transaction). */
    async remove(sql: Sql, runIds: readonly string[]): Promise<void> {
      await sql.count('DELETE FROM run_events WHERE run_id = ANY($1)', [runIds]);
    },
  };
}

export type PgRunEvents = ReturnType<typeof pgRunEvents>;

/**
 * One statement that makes a write of runs and appends events to each run it wrote (`append` is
 * one with no write of its own): `write` is a statement returning the runs' `id` and `at`, the time of an
 * event given none. Its parameters (by name: shared/statements.ts, numbered) are the write's, and
 * @event_types, @event_data, @event_at (arrays, one element per event) and @events_limit. The
 * statement returns the written rows, each with `added`: how many events were kept (the writer
 * tells the other replicas once it committed: notifier.ts). `more`: CTEs the write reads (`before`), further
 * writes that read what it returned (`after`), and a condition on a written row `w` and an event `e`
 * (`e.ord` its place, from 1) that keeps the event only for some rows (`keep`).
 *
 * The events are numbered after the run's last one as the statement's snapshot has it. The write
 * locks the run's row; when it had to wait for another transaction that appended to the run and
 * committed, the snapshot misses those events, and the insert collides with the primary key
 * (run_id, seq) rather than number twice: `isStaleAppend` says so, and the statement is simply sent
 * again (its new snapshot sees them).
 */
export function withEventsAppended(write: string, more: { before?: string; after?: string; keep?: string } = {}): string {
  return `WITH ${more.before ? `${more.before},` : ''} written AS (${write}), ${more.after ? `${more.after},` : ''}
    kept AS (
      SELECT w.id, n.last, e.type, e.data, COALESCE(e.at, w.at) AS at, row_number() OVER (PARTITION BY w.id ORDER BY e.ord) AS k
      FROM written AS w
      CROSS JOIN LATERAL (SELECT COALESCE(MAX(seq), 0) AS last FROM run_events WHERE run_id = w.id) AS n
      CROSS JOIN unnest(@event_types::text[], @event_data::text[], @event_at::text[]) WITH ORDINALITY AS e (type, data, at, ord)
      WHERE (n.last + e.ord <= @events_limit OR e.type = '${FINAL_EVENT}')${more.keep ? ` AND (${more.keep})` : ''}),
    added AS (INSERT INTO run_events (run_id, seq, type, data, at) SELECT id, last + k, type, data, at FROM kept RETURNING run_id)
    SELECT w.*, (SELECT COUNT(*) FROM added AS a WHERE a.run_id = w.id) AS added
    FROM written AS w`;
}

/** The parameters of withEventsAppended's events. */
export const appendedEvents = (events: readonly RunEventInput[], limit: number) => ({
  event_types: events.map((e) => e.type),
  event_data: events.map((e) => JSON.stringify(e.data)),
  event_at: events.map((e) => e.at ?? null),
  events_limit: limit,
});

/** The error of a statement whose append met events committed after its snapshot (see withEventsAppended). */
export const isStaleAppend = (err: unknown): boolean => {
  const e = err as { code?: string; constraint?: string };
  return e.code === '23505' && e.constraint === 'run_events_pkey';
};
