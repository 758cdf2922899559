// What the PostgreSQL run repository's roles share: one transaction per write, or one statement
// (writeWithEvents), with the run's events appended and told of once committed; the order of one
// run's writes, the credit statements, and the signal that a run is queued. Nothing is kept in this
// process: every read asks the database. Every write's guarantees are conditional statements with
// their affected-row counts checked; a write that must read a run before changing it reads it FOR
// UPDATE, so that what it read stays true until it commits. Locks are taken in one order, a run's
// row before its workspace's, so writes of one run and one workspace do not deadlock each other
// (and a deadlock there is run again: database.ts).
import type { RunEventInput, RunRow } from '../../port';
import type { Ack } from '../../shared/ack';
import type { PgDatabase, Sql } from '../database';
export { credit, withDebit, type Debit } from '../credits';
import type { Notifications } from '../notifications';
import { Notifier, NOTIFY_ALL } from '../notifier';
import { isStaleAppend, pgRunEvents, RUN_EVENTS_CHANNEL, type PgRunEvents } from '../run-events';

/** The channel on which a write that queued a run says so (its payload: the writer's instance id). */
export const RUNS_QUEUED_CHANNEL = 'build_runs_queued';

/** A write's statements, and the append of a run's events (after the statement that locked its row: see run-events.ts). */
export interface Tx extends Sql {
  append(runId: string, events: readonly RunEventInput[], now: string | null): Promise<void>;
  /** Tells the other replicas, once the transaction committed, that a run is queued. */
  queued(): void;
}

/** What the writes that change a run's credits or status read of it first, FOR UPDATE. */
export type LockedRun = Pick<RunRow, 'status' | 'workspace_id' | 'credits_reserved' | 'credits_spent' | 'cancel_requested_at'>;

export interface PgRunContext {
  db: PgDatabase;
  events: PgRunEvents;
  /** This replica's name on the notification channels. */
  self: string;
  /**
   * Runs `work` in one transaction; once it committed, every replica hears of the runs it added
   * events to (and, if it said so, that a run is queued). The workers' own writes are acknowledged
   * once `visible` (see PgDatabase.transaction).
   */
  write<T>(work: (tx: Tx) => Promise<T>, ack?: Ack): Promise<T>;
  /** Runs a worker's writes of one run in the order it made them (see below). */
  inOrder<T>(runId: string, next: () => Promise<T>): Promise<T>;
  /** After a commit that added events to the run: this process's listeners hear of it now, the other replicas' soon (notifier.ts). */
  eventsAdded(runId: string): void;
  /** After a commit that queued a run: the other replicas hear of it soon (this one's runner is told by its caller). */
  queued(): void;
  onEvents(listener: (runId: string) => void): void;
  onQueued(listener: () => void): void;
}

/**
 * Sends a statement of withEventsAppended (one round trip, committed on its own, acknowledged once
 * visible), again while its events' numbering met events committed after its snapshot; then tells
 * every replica of the run it added events to. Its first row, if any.
 */
export async function writeWithEvents<R extends { id: string; added: number }>(ctx: PgRunContext, text: string, params: unknown[]): Promise<R | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      const row = await ctx.db.visible.row<R>(text, params);
      if (row && row.added > 0) ctx.eventsAdded(row.id);
      return row;
    } catch (err) {
      if (attempt < MAX_STALE_APPENDS && isStaleAppend(err)) continue;
      throw err;
    }
  }
}

/** How often a statement is sent again for a stale append (each time, another append committed while it waited). */
const MAX_STALE_APPENDS = 5;

/** A run's row, locked until the transaction ends (the latest committed version, READ COMMITTED). */
export const lockRun = (sql: Sql, id: string) =>
  sql.row<LockedRun>('SELECT status, workspace_id, credits_reserved, credits_spent, cancel_requested_at FROM runs WHERE id = $1 FOR UPDATE', [id]);

export function pgRunContext(db: PgDatabase, notifications: Notifications, eventsLimit?: number): PgRunContext {
  const events = pgRunEvents(eventsLimit);
  const self = notifications.instanceId;
  const eventListeners: ((runId: string) => void)[] = [];
  const queuedListeners: (() => void)[] = [];
  const notifier = new Notifier((channels, payloads) => db.visible.rows(NOTIFY_ALL, [channels, payloads]));
  const eventsAdded = (runId: string) => {
    for (const listener of eventListeners) listener(runId);
    notifier.notify(RUN_EVENTS_CHANNEL, `${self}:${runId}`);
  };
  const tellQueued = () => notifier.notify(RUNS_QUEUED_CHANNEL, self);

  // Other replicas' event writes: `<instance>:<run id>`; ours were told when they committed.
  // After a reconnection (null) nothing is called: no run is named, and the event feed reads every
  // run with open streams each second anyway (FEED_POLL_MS), which covers what was missed.
  notifications.on(RUN_EVENTS_CHANNEL, (payload) => {
    if (payload === null) return;
    const colon = payload.indexOf(':');
    if (colon < 0 || payload.slice(0, colon) === self) return;
    for (const listener of eventListeners) listener(payload.slice(colon + 1));
  });
  // Runs queued by other replicas (ours are handed to this process's runner by its caller), and
  // after a reconnection: a run may have been queued meanwhile.
  notifications.on(RUNS_QUEUED_CHANNEL, (payload) => {
    if (payload === self) return;
    for (const listener of queuedListeners) listener();
  });

  // A worker's writes of one run land in the order it made them: it saves progress without waiting
  // and may end the run meanwhile; a pool of connections could commit the end first, and the save's
  // events would be dropped as 'not_running'. Only writes in flight are held here, never rows.
  const lanes = new Map<string, Promise<unknown>>();

  return {
    db,
    events,
    self,
    write: async (work, ack = 'durable') => {
      let touched = new Set<string>();
      let queued = false;
      const value = await db.transaction(
        (sql) => {
          // a transaction run again (a deadlock) starts from nothing
          touched = new Set();
          queued = false;
          return work({
            ...sql,
            append: async (runId, more, now) => {
              if ((await events.append(sql, runId, more, now)) > 0) touched.add(runId);
            },
            queued: () => void (queued = true),
          });
        },
        { ack },
      );
      for (const runId of touched) eventsAdded(runId);
      if (queued) tellQueued();
      return value;
    },
    inOrder: (runId, next) => {
      const mine = (lanes.get(runId) ?? Promise.resolve()).then(next, next);
      const tail = mine.catch(() => undefined);
      lanes.set(runId, tail);
      void tail.then(() => lanes.get(runId) === tail && lanes.delete(runId));
      return mine;
    },
    eventsAdded,
    queued: tellQueued,
    onEvents: (listener) => void eventListeners.push(listener),
    onQueued: (listener) => void queuedListeners.push(listener),
  };
}
