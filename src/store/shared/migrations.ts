// What both adapters' migration runners share: the migration files of a directory (numbered
// `NNN_name.sql`, applied in order), and which of them a database has not applied yet. Each adapter
// takes its own lock first (SQLite: an IMMEDIATE transaction; PostgreSQL: an advisory lock) and
// records each version in its schema_migrations table with the migration.
import fs from 'node:fs';
import path from 'node:path';

export interface Migration {
  version: number;
  /** The file's name, as recorded. */
  name: string;
  sql: string;
}

const MIGRATION_FILE = /^\d+_[a-z0-9_]+\.sql$/;

/** The migrations of `dir` in the order they apply. */
export function migrationsIn(dir: string): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => MIGRATION_FILE.test(f))
    .sort()
    .map((name) => ({ version: Number(name.split('_', 1)[0]), name, sql: fs.readFileSync(path.join(dir, name), 'utf8') }));
}

/** The migrations not among the `applied` versions, in order. */
export function pendingMigrations(all: readonly Migration[], applied: Iterable<number>): Migration[] {
  const done = new Set(applied);
  return all.filter((m) => !done.has(m.version));
}
