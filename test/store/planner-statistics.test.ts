// PostgreSQL only: a plan made when a table was empty does not outlive the table's growth. Every
// session plans a named statement once, for any values (database.ts); the adapter analyzes a table
// that has doubled since its statistics (planner-statistics.ts), and the new statistics make every
// session plan again.
import pg from 'pg';
import { uuidV7 } from '../../src/ids';
import { openPgDatabase, refreshStatistics, replicated, useStore } from './adapters';
import { range, until, workspace } from './fixtures';

/**
 * Makes `session` report its row counts now. PostgreSQL 15 flushes a session's statistics when it
 * goes idle, but at most once a second: one that flushed less than a second before reports its
 * counts only after 10 s idle (PGSTAT_IDLE_INTERVAL), past this file's deadlines.
 */
async function flushStatistics(session: pg.Client): Promise<void> {
  // Flushed as the session goes idle after it, before it says it is ready for the next query.
  await session.query('SELECT pg_stat_force_next_flush()');
}

describe.each(replicated)('$name only: planner statistics', (adapter) => {
  const { opened } = useStore(adapter);

  test('a lookup of runs by id planned on the empty table scans it; once 3,000 runs are in and the table analyzed, the same session reads the primary key', async () => {
    const raw = new pg.Client({ connectionString: opened.url as string });
    const db = openPgDatabase(opened.url as string, { max: 1 });
    await raw.connect();
    try {
      await raw.query('SET plan_cache_mode = force_generic_plan');
      await raw.query('PREPARE by_ids AS SELECT id, status FROM runs WHERE id = ANY($1::text[])');
      const plan = async () => JSON.stringify((await raw.query(`EXPLAIN (FORMAT JSON) EXECUTE by_ids('{a,b}')`)).rows[0]['QUERY PLAN']);
      expect(await plan()).toContain('"Node Type":"Seq Scan"');

      const ids = range(3000).map((i) => uuidV7(Date.now() + i));
      await raw.query(
        `INSERT INTO runs (id, kind, workspace_id, started_by, target_id, target_version, status, source, request, snapshot, state, credits_reserved, credits_spent, accepted_at)
         SELECT id, 'agent', $2, 'u', 't', 1, 'succeeded', 'api', '{}', '{}', '{}', 1, 1, '2026-01-01T00:00:00.000Z' FROM unnest($1::text[]) AS t (id)`,
        [ids, workspace()],
      );
      await flushStatistics(raw);
      expect(await plan()).toContain('"Node Type":"Seq Scan"'); // the plan kept: what the refresh is for

      // The store's own check may come first (the next case): either analyzes it.
      await until(async () => {
        await refreshStatistics(db);
        return !(await plan()).includes('Seq Scan');
      });
      expect(await plan()).toContain('"Index Name":"runs_pkey"');
      // Analyzed at 3,000 rows: not again until it holds twice as many.
      expect(await refreshStatistics(db)).not.toContain('runs');
    } finally {
      await raw.end();
      await db.close();
    }
  });

  test('the store analyzes a grown table on its own, within seconds', async () => {
    const raw = new pg.Client({ connectionString: opened.url as string });
    await raw.connect();
    try {
      const analyzedAt = async () =>
        (await raw.query(`SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'kv_entries'`)).rows[0].last_analyze as Date | null;
      expect(await analyzedAt()).toBeNull();
      // Autovacuum left out of this table (of this test's own database): an ANALYZE of its own
      // would leave the store nothing stale to analyze. In CI's full runs, with a database per test
      // on the cluster, its workers came round within the deadline and the case failed.
      await raw.query('ALTER TABLE kv_entries SET (autovacuum_enabled = false)');
      await raw.query(
        `INSERT INTO kv_entries (workspace_id, key, value, updated_at) SELECT $1, 'k' || i, '1', '2026-01-01T00:00:00.000Z' FROM generate_series(1, 1000) AS i`,
        [workspace()],
      );
      await flushStatistics(raw);
      // Alone it takes 2–3 s (a check every 2 s); the deadline allows for a loaded machine.
      await until(async () => (await analyzedAt()) !== null, 40_000);
      const { last_autoanalyze } = (await raw.query(`SELECT last_autoanalyze FROM pg_stat_user_tables WHERE relname = 'kv_entries'`)).rows[0];
      expect(last_autoanalyze).toBeNull(); // the store's ANALYZE, not autovacuum's
    } finally {
      await raw.end();
    }
  }, 60_000);
});
