// Group commit: every write the store makes is queued and, once the code that is running now and
// its microtasks are done (process.nextTick), all queued writes run in one SQLite transaction. Each
// write runs in its own savepoint, so one that fails (a constraint, a refused compare-and-set)
// rolls back alone. Each caller learns its own outcome only once the group is durable: with a
// WalSync, after an fsync of the WAL on the thread pool that started after the group committed —
// groups committed while one fsync runs share the next one — so the event loop never waits for
// the disk and nothing is acknowledged before it is on disk.
//
// A committed group is visible to reads before its fsync returns (as with any WAL commit before
// the caller hears back); only its writers wait. (Flushing on setImmediate instead of nextTick
// batched more writes per transaction but added a whole I/O phase to every await of the run
// workers: workflow runs fell from 224 to 48 executions/s. See docs/benchmarks.md.)
import type { Db, WalSync } from './db';

/**
 * When a write's caller hears back: `durable` once it is on disk (every API write), `visible` once
 * its transaction has committed (the run workers' own progress: a run that a stop interrupts is
 * finished as failed at the next start whatever it wrote, and the WAL keeps commit order, so what
 * survives a power loss is always a prefix of what committed — never a run's end without the
 * writes before it).
 */
export type Ack = 'durable' | 'visible';

export interface GroupCommit {
  run<T>(work: () => T, ack?: Ack): Promise<T>;
  /** Commits and syncs what is queued now (before the database is closed). */
  drain(): void;
}

interface Pending {
  work: () => unknown;
  ack: Ack;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export function createGroupCommit(db: Db, wal: WalSync | null = null): GroupCommit {
  let pending: Pending[] = [];
  let scheduled = false;
  /** Committed groups whose writers wait for the next fsync. */
  let unsynced: (() => void)[] = [];
  let unsyncedFailure: ((error: Error) => void)[] = [];
  let syncing = false;
  // Called inside the group's transaction, better-sqlite3 makes this a SAVEPOINT.
  const inSavepoint = db.transaction((work: () => unknown) => work());

  const settle = (batch: Pending[], outcomes: Outcome[]) =>
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) item.resolve(outcome.value);
      else item.reject(outcome.error);
    });

  const startSync = () => {
    if (syncing || !wal || !unsynced.length) return;
    syncing = true;
    const covered = unsynced;
    const failed = unsyncedFailure;
    unsynced = [];
    unsyncedFailure = [];
    wal.sync((err) => {
      syncing = false;
      if (err) for (const fail of failed) fail(new Error(`the write could not be made durable: ${err.message}`));
      else for (const acknowledge of covered) acknowledge();
      startSync();
    });
  };

  const flush = () => {
    scheduled = false;
    if (!pending.length) return; // drained already
    const batch = pending;
    pending = [];
    const outcomes: Outcome[] = [];
    try {
      db.transaction(() => {
        for (const item of batch) {
          try {
            outcomes.push({ ok: true, value: inSavepoint(item.work) });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      }).immediate();
    } catch (error) {
      for (const item of batch) item.reject(error); // the commit failed: nothing of the group landed
      return;
    }
    if (!wal) return settle(batch, outcomes);
    const durable: Pending[] = [];
    const durableOutcomes: Outcome[] = [];
    const visible: Pending[] = [];
    const visibleOutcomes: Outcome[] = [];
    batch.forEach((item, i) => {
      (item.ack === 'durable' ? durable : visible).push(item);
      (item.ack === 'durable' ? durableOutcomes : visibleOutcomes).push(outcomes[i]!);
    });
    settle(visible, visibleOutcomes);
    if (!durable.length) return;
    unsynced.push(() => settle(durable, durableOutcomes));
    unsyncedFailure.push((error) => durable.forEach((item) => item.reject(error)));
    startSync();
  };

  return {
    drain() {
      if (pending.length) flush();
      if (wal && unsynced.length) {
        wal.syncNow();
        const covered = unsynced;
        unsynced = [];
        unsyncedFailure = [];
        for (const acknowledge of covered) acknowledge();
      }
    },
    run<T>(work: () => T, ack: Ack = 'durable'): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        pending.push({ work, ack, resolve: resolve as (value: unknown) => void, reject });
        if (!scheduled) {
          scheduled = true;
          process.nextTick(flush);
        }
      });
    },
  };
}
