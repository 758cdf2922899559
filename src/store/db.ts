// Opens the SQLite file with the settings every part of the store relies on, and applies the
// numbered migrations in src/store/migrations that it has not applied yet.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { migrationsDir } from '../paths';

export type Db = Database.Database;

export function openDatabase(file: string): Db {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  // WAL: readers never block the writer. synchronous=FULL: a commit is on disk (fsync of the WAL)
  // before the API acknowledges the write, so an acknowledged write survives a power loss.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

export function migrate(db: Db, dir: string = migrationsDir): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`);
  const done = new Set(
    db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[],
  );
  const files = fs
    .readdirSync(dir)
    .filter((f) => /^\d+_[a-z0-9_]+\.sql$/.test(f))
    .sort();
  const applied: number[] = [];
  for (const file of files) {
    const version = Number(file.split('_', 1)[0]);
    if (done.has(version)) continue;
    const sql = fs.readFileSync(path.join(dir, file), 'utf8');
    db.transaction(() => {
      db.exec(sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        version,
        file,
        new Date().toISOString(),
      );
    }).immediate();
    applied.push(version);
  }
  return applied;
}
