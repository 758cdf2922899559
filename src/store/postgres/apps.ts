// The workspaces' own apps on PostgreSQL, for any number of replicas. A create holds a
// transaction-scoped advisory lock on (apps, workspace) while it counts and picks its slug (the
// primary key is the backstop); a replace and a delete are compare-and-set on the stamp (the
// statement's affected-row count decides).
import { firstFreeSlug } from '../../domain/agent';
import type { StampClock } from '../../domain/stamps';
import type { AppRepository, StoredApp } from '../port';
import { APP_COLUMNS, appOfRow, type AppRow } from '../shared/apps';
import { holdsNul } from './documents';
import type { PgDatabase, Sql } from './database';

const read = async (sql: Sql, ws: string, slug: string): Promise<StoredApp | null> => {
  if (holdsNul(slug)) return null;
  const row = await sql.row<AppRow>(`SELECT ${APP_COLUMNS} FROM workspace_apps WHERE workspace_id = $1 AND slug = $2`, [ws, slug]);
  return row ? appOfRow(row) : null;
};

export function pgAppRepository(db: PgDatabase, clock: StampClock): AppRepository {
  return {
    snapshotKey: async (ws) =>
      (await db.row<{ key: string }>(
        `SELECT (SELECT COUNT(*) || ':' || COALESCE(MAX(stamp_us), 0) FROM workspace_apps WHERE workspace_id = $1)
           || '|' || (SELECT COUNT(*) || ':' || COALESCE(MAX(stamp_us), 0) FROM connections WHERE workspace_id = $1) AS key`,
        [ws],
      ))!.key,
    list: async (ws) => (await db.rows<AppRow>(`SELECT ${APP_COLUMNS} FROM workspace_apps WHERE workspace_id = $1 ORDER BY slug`, [ws])).map(appOfRow),
    get: (ws, slug) => read(db, ws, slug),
    create: (ws, settings, opts) =>
      db.transaction(async (sql) => {
        await sql.row('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`workspace_apps:${ws}`]);
        const slugs = new Set((await sql.rows<{ slug: string }>('SELECT slug FROM workspace_apps WHERE workspace_id = $1', [ws])).map((r) => r.slug));
        if (slugs.size >= opts.limit) return { ok: false, reason: 'limit_reached' as const };
        const taken = (slug: string) => opts.reserved.has(slug) || slugs.has(slug);
        if (!opts.deriveSlug && taken(settings.slug)) return { ok: false, reason: 'slug_taken' as const };
        const slug = firstFreeSlug(settings.slug, taken, 30);
        await sql.count('INSERT INTO workspace_apps (workspace_id, slug, settings, stamp_us, created_at) VALUES ($1, $2, $3, $4, $5)', [
          ws,
          slug,
          JSON.stringify({ ...settings, slug }),
          clock.next(),
          new Date().toISOString(),
        ]);
        return { ok: true as const, app: (await read(sql, ws, slug)) as StoredApp };
      }),
    replace: async (ws, slug, expected, settings) => {
      const changed = await db.count('UPDATE workspace_apps SET settings = $3, stamp_us = $4 WHERE workspace_id = $1 AND slug = $2 AND stamp_us = $5', [
        ws,
        slug,
        JSON.stringify({ ...settings, slug }),
        clock.next(expected),
        expected,
      ]);
      return changed === 1 ? { ok: true as const, app: (await read(db, ws, slug)) as StoredApp } : { ok: false as const, current: await read(db, ws, slug) };
    },
    recordRefresh: async (ws, slug, outcome, at) => {
      const found = 'tools' in outcome;
      const row = await db.row<AppRow>(
        `UPDATE workspace_apps SET tools = COALESCE($3, tools), server = COALESCE($4, server), refreshed_at = $5, refresh_error = $6,
           stamp_us = GREATEST(stamp_us + 1, $7) WHERE workspace_id = $1 AND slug = $2 RETURNING ${APP_COLUMNS}`,
        [ws, slug, found ? JSON.stringify(outcome.tools) : null, found ? JSON.stringify(outcome.server) : null, at, found ? null : outcome.error, clock.next()],
      );
      return row ? appOfRow(row) : null;
    },
    remove: async (ws, slug, expected) => {
      if ((await db.count('DELETE FROM workspace_apps WHERE workspace_id = $1 AND slug = $2 AND stamp_us = $3', [ws, slug, expected])) === 1) return 'removed';
      return (await read(db, ws, slug)) ? 'stale' : 'missing';
    },
  };
}
