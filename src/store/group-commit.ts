// Group commit: every write the store makes is queued and, once the code that is running now and
// its microtasks are done (process.nextTick), all queued writes run in one SQLite transaction — one
// fsync for the group instead of one per write. (Waiting for setImmediate batched more HTTP writes
// together but added the length of a whole I/O phase to every await of the run workers: workflow
// runs fell from 224 to 48 executions/s. See docs/benchmarks.md.) Each write runs in its own savepoint, so one that fails (a constraint, a refused
// compare-and-set) rolls back alone; each caller learns its own outcome only after the group has
// committed, so nothing is acknowledged before it is durable.
import type { Db } from './db';

export interface GroupCommit {
  run<T>(work: () => T): Promise<T>;
  /** Commits what is queued now (before the database is closed). */
  drain(): void;
}

interface Pending {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export function createGroupCommit(db: Db): GroupCommit {
  let pending: Pending[] = [];
  let scheduled = false;
  // Called inside the group's transaction, better-sqlite3 makes this a SAVEPOINT.
  const inSavepoint = db.transaction((work: () => unknown) => work());

  const flush = () => {
    scheduled = false;
    if (!pending.length) return; // drained already
    const batch = pending;
    pending = [];
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
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
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) item.resolve(outcome.value);
      else item.reject(outcome.error);
    });
  };

  return {
    drain() {
      if (pending.length) flush();
    },
    run<T>(work: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        pending.push({ work, resolve: resolve as (value: unknown) => void, reject });
        if (!scheduled) {
          scheduled = true;
          process.nextTick(flush);
        }
      });
    },
  };
}
