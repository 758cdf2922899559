// Planner statistics kept up with the tables' growth. Every session plans a named statement once,
// for any values (database.ts, plan_cache_mode), and keeps that plan until a table it reads gets
// new statistics. A database starts with empty tables, so the plans its sessions make first are
// plans for empty tables: a lookup of runs by id that scans the whole table, a run's end that walks
// every running run's lease to find one, a document check that hashes the whole table. Autovacuum's
// first ANALYZE ends that, but only when its pass comes round (autovacuum_naptime, a minute by
// default) and for some tables much later. Until then a growing table costs every lookup more
// (issue 25, docs/benchmarks.md).
//
// Here each replica looks every few seconds for the service's tables that hold at least twice the
// rows of their last ANALYZE (and at least MIN_ROWS), and analyzes them; the new statistics make
// every session plan again. A table is analyzed about log2(rows / MIN_ROWS) times while it grows;
// rows rewritten in place (a run's updates, a kv key's) do not count, so a busy table of steady
// size is left to autovacuum. SKIP_LOCKED: a table another replica or autovacuum is analyzing is
// left to it.
import pg from 'pg';
import type { PgDatabase } from './database';

/** Rows below which a table keeps the statistics it has: a plan for an empty table costs little at this size. */
const MIN_ROWS = 100;

/** How often a replica looks. */
const STATISTICS_CHECK_MS = 2_000;

const STALE_TABLES = `SELECT s.relname AS name FROM pg_stat_user_tables AS s JOIN pg_class AS c ON c.oid = s.relid
  WHERE s.schemaname = current_schema() AND s.n_live_tup >= GREATEST($1::float8, 2 * c.reltuples)
  ORDER BY s.relname`;

/** What a check did: the tables it analyzed. */
export async function refreshStatistics(db: PgDatabase): Promise<string[]> {
  const stale = await db.rows<{ name: string }>(STALE_TABLES, [MIN_ROWS]);
  for (const { name } of stale) await db.rows(`ANALYZE (SKIP_LOCKED) ${pg.escapeIdentifier(name)}`);
  return stale.map((t) => t.name);
}

export interface StatisticsKeeper {
  stop(): Promise<void>;
}

/**
 * Checks every STATISTICS_CHECK_MS (a check still under way is not started again) until stopped. A
 * failed check (the database away, ANALYZE not permitted) leaves the statistics to autovacuum
 * until the next.
 */
export function keepStatistics(db: PgDatabase): StatisticsKeeper {
  let running: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    running ??= refreshStatistics(db)
      .catch(() => undefined)
      .finally(() => (running = null));
  }, STATISTICS_CHECK_MS);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
