// Applies the PostgreSQL migrations (src/store/postgres/migrations, numbered like SQLite's but a
// sequence of their own) that the database has not applied yet. Replicas starting together take a
// session-level advisory lock first: one applies each migration, in its own transaction, and the
// others wait, then find it applied.
import { pgMigrationsDir } from '../../paths';
import { migrationsIn, pendingMigrations } from '../shared/migrations';
import type { PgDatabase } from './database';

/** The advisory lock's key: any constant that no other lock of this database uses ('build-api' as a number). */
export const MIGRATION_LOCK_KEY = 0x6275696c64;

export async function migratePg(db: PgDatabase, dir: string = pgMigrationsDir): Promise<number[]> {
  const all = migrationsIn(dir);
  const client = await db.pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL)`);
    const done = (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version);
    const applied: number[] = [];
    for (const migration of pendingMigrations(all, done)) {
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          migration.version,
          migration.name,
          new Date().toISOString(),
        ]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${migration.name} failed: ${(err as Error).message}`);
      }
      applied.push(migration.version);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    client.release();
  }
}
