// Opens the SQLite file with the settings every part of the store relies on, and applies the
// numbered migrations in src/store/sqlite/migrations that it has not applied yet.
// Statements bind a LIMIT as `LIMIT CAST(? AS INTEGER)`: SQLite plans with the value of a LIMIT
// bound bare and prepares the statement again at each binding (test/unit/sqlite-bound-limit.test.ts).
import fs from 'node:fs';
import { openSqlite, type SqliteDatabase } from '../../sqlite-driver';
import { openInDataDirectory } from '../../data-directory/data-directory';
import { migrationsDir } from '../../paths';
import { migrationsIn, pendingMigrations } from '../shared/migrations';

export type Db = SqliteDatabase;

export function openDatabase(file: string): Db {
  const db = openInDataDirectory(file, openSqlite);
  // First, so that every statement below waits for another process's write lock rather than failing.
  db.pragma('busy_timeout = 5000');
  // WAL: readers never block the writer. synchronous=FULL: a commit is on disk (fsync of the WAL)
  // before it returns, so an acknowledged write survives a power loss. (The service's store hands
  // that fsync to the thread pool instead: see walSync.)
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  migrate(db);
  return db;
}

/** Makes every transaction committed so far durable, then calls back (see walSync). */
export interface WalSync {
  sync(done: (err: Error | null) => void): void;
  /** The same, synchronously (at close). */
  syncNow(): void;
  close(): void;
}

/**
 * The fsync that synchronous=FULL makes at the end of every commit, taken off the event loop:
 * commits run with synchronous=NORMAL (frames written to the WAL, not yet flushed), and the caller
 * fsyncs the WAL file on libuv's thread pool and acknowledges the writes of a group only when it
 * returns. A commit then blocks the event loop for its writes (tens of microseconds), not for the
 * disk flush, and one flush covers every group committed while the previous one ran. What is
 * durable is the same as with FULL: a transaction is acknowledged only once its WAL frames are on
 * disk. (NORMAL still syncs the WAL before each checkpoint and the database after it, so a
 * checkpoint never loses a frame.) Null for an in-memory database.
 */
export function walSync(db: Db): WalSync | null {
  if (db.memory) return null;
  db.pragma('synchronous = NORMAL');
  // The WAL file exists while a connection is open (it was used by the migrations' read), and
  // SQLite reuses it from its start after a checkpoint rather than replacing it: one descriptor serves.
  const fd = fs.openSync(`${db.name}-wal`, 'r');
  return {
    sync: (done) => fs.fsync(fd, done),
    syncNow: () => fs.fsyncSync(fd),
    close: () => fs.closeSync(fd),
  };
}

/**
 * Applies the migrations not applied yet, all in one IMMEDIATE transaction: the write lock is taken
 * before the applied versions are read, so two processes starting on a fresh file cannot both apply
 * one (the second waits, then finds them applied). Returns the versions this call applied.
 */
export function migrate(db: Db, dir: string = migrationsDir): number[] {
  const all = migrationsIn(dir);
  return db
    .transaction(() => {
      db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`);
      const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
      const pending = pendingMigrations(all, db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
      for (const migration of pending) {
        db.exec(migration.sql);
        record.run(migration.version, migration.name, new Date().toISOString());
      }
      return pending.map((m) => m.version);
    })
    .immediate();
}
