// Group commit: every write the store makes is queued, and the queued writes run together in one
// SQLite transaction (when: see `schedule`; durable and visible writes form separate groups, each
// kept in the order it was queued — no write of one kind waits for the other). Each
// write runs in its own savepoint, so one that fails (a constraint, a refused compare-and-set)
// rolls back alone. Each caller learns its own outcome only once the group is durable: with a
// WalSync, after an fsync of the WAL on the thread pool that started after the group committed —
// groups committed while one fsync runs share the next one — so the event loop never waits for
// the disk and nothing is acknowledged before it is on disk.
//
// A committed group is visible to reads before its fsync returns (as with any WAL commit before
// the caller hears back); only its writers wait. Visible writes are flushed as soon as the running
// code is done, not a turn of the event loop later: a run worker awaits each of its writes in turn,
// and an I/O phase per await is what a run would then cost (docs/benchmarks.md).
import type { Ack } from '../shared/ack';
import type { Db, WalSync } from './database';

export type { Ack } from '../shared/ack';

export interface GroupCommit {
  /**
   * Queues `work` (synchronous statements) for the next group. It runs atomically, in its own
   * savepoint of the group's transaction: a write of several statements needs no transaction of its
   * own (a nested one would only add a second savepoint).
   */
  run<T>(work: () => T, ack?: Ack): Promise<T>;
  /** Commits and syncs what is queued now (before the database is closed). */
  drain(): void;
  /** Calls `listener` when a group fails to commit (its writes rolled back): for caches of what the writes changed. */
  onRollback(listener: () => void): void;
}

interface Pending {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
/** A committed group whose writers wait for an fsync. */
type Group = { batch: Pending[]; outcomes: Outcome[] };

// This function is long because its parts are one state machine: the queues of each
// acknowledgement, the fsync in flight and the drain at close read and change the same variables.
export function createGroupCommit(db: Db, wal: WalSync | null = null): GroupCommit {
  const pending: Record<Ack, Pending[]> = { durable: [], visible: [] };
  const rollbackListeners: (() => void)[] = [];
  const scheduled: Record<Ack, boolean> = { durable: false, visible: false };
  /** Committed groups that wait for the next fsync. */
  let unsynced: Group[] = [];
  /** The groups the running fsync covers; `settled` once drain() has synced them itself. */
  let syncing: { settled: boolean; covered: Group[] } | null = null;
  // Called inside the group's transaction, better-sqlite3 makes this a SAVEPOINT.
  const inSavepoint = db.transaction((work: () => unknown) => work());
  // The group's transaction, made once: db.transaction builds its wrappers on every call.
  const inGroup = db.transaction((batch: Pending[], outcomes: Outcome[]) => {
    for (const item of batch) {
      try {
        outcomes.push({ ok: true, value: inSavepoint(item.work) });
      } catch (error) {
        outcomes.push({ ok: false, error });
      }
    }
  });

  const settle = ({ batch, outcomes }: Group) =>
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) item.resolve(outcome.value);
      else item.reject(outcome.error);
    });

  // A failed fsync fails the writes it covered (500): they committed, but nobody can say whether
  // they are on disk.
  const startSync = () => {
    if (syncing || !wal || !unsynced.length) return;
    const run = { settled: false, covered: unsynced };
    syncing = run;
    unsynced = [];
    wal.sync((err) => {
      syncing = null;
      if (run.settled) return;
      const failure = err && new Error(`the write could not be made durable: ${err.message}`);
      for (const group of run.covered) {
        if (failure) for (const item of group.batch) item.reject(failure);
        else settle(group);
      }
      startSync();
    });
  };

  const flush = (ack: Ack) => {
    scheduled[ack] = false;
    const batch = pending[ack];
    if (!batch.length) return; // drained already
    pending[ack] = [];
    const outcomes: Outcome[] = [];
    try {
      inGroup.immediate(batch, outcomes);
    } catch (error) {
      for (const listener of rollbackListeners) listener();
      for (const item of batch) item.reject(error); // the commit failed: nothing of the group landed
      return;
    }
    if (!wal || ack === 'visible') return settle({ batch, outcomes });
    unsynced.push({ batch, outcomes });
    startSync();
  };

  // Durable writes wait for an fsync anyway, so they gather for a whole turn of the event loop
  // (setImmediate: every request that arrived in this I/O phase joins one transaction); visible
  // ones commit as soon as the running code and its microtasks are done (process.nextTick), since
  // a run worker awaits each of them in turn. Without a WalSync every commit syncs itself, as before.
  const schedule = (ack: Ack) => {
    if (scheduled[ack]) return;
    scheduled[ack] = true;
    if (wal && ack === 'durable') setImmediate(flush, ack);
    else process.nextTick(flush, ack);
  };

  return {
    onRollback(listener) {
      rollbackListeners.push(listener);
    },
    drain() {
      flush('durable');
      flush('visible');
      const inFlight = syncing;
      if (wal && (unsynced.length || inFlight)) {
        wal.syncNow(); // covers the running fsync's groups too: the store is about to close its file
        const covered = [...(inFlight?.covered ?? []), ...unsynced];
        if (inFlight) inFlight.settled = true;
        unsynced = [];
        covered.forEach(settle);
      }
    },
    run<T>(work: () => T, ack: Ack = 'durable'): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        pending[ack].push({ work, resolve: resolve as (value: unknown) => void, reject });
        schedule(ack);
      });
    },
  };
}
