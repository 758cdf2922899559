// The workspaces' own apps on SQLite. Each write runs in its own savepoint of a group commit
// (group-commit.ts): the count, the slug chosen and the insert, or the stamp checked and the
// update, land together or not at all.
import { firstFreeSlug } from '../../domain/agent';
import type { StampClock } from '../../domain/stamps';
import type { AppRepository, StoredApp } from '../port';
import { APP_COLUMNS, appOfRow, type AppRow } from '../shared/apps';
import type { Db } from './database';
import type { GroupCommit } from './group-commit';

export function appRepository(db: Db, commit: GroupCommit, clock: StampClock): AppRepository {
  // Every write takes a stamp past every other (the clock): a create, replace, refresh or check
  // moves the largest one, and a delete the count.
  const key = db
    .prepare(
      `SELECT (SELECT COUNT(*) || ':' || IFNULL(MAX(stamp_us), 0) FROM workspace_apps WHERE workspace_id = @ws)
         || '|' || (SELECT COUNT(*) || ':' || IFNULL(MAX(stamp_us), 0) FROM connections WHERE workspace_id = @ws)`,
    )
    .pluck();
  const list = db.prepare(`SELECT ${APP_COLUMNS} FROM workspace_apps WHERE workspace_id = ? ORDER BY slug`);
  const get = db.prepare(`SELECT ${APP_COLUMNS} FROM workspace_apps WHERE workspace_id = ? AND slug = ?`);
  const count = db.prepare('SELECT COUNT(*) FROM workspace_apps WHERE workspace_id = ?').pluck();
  const insert = db.prepare(`INSERT INTO workspace_apps (workspace_id, slug, settings, stamp_us, created_at) VALUES (@ws, @slug, @settings, @stamp, @created)`);
  const update = db.prepare(
    'UPDATE workspace_apps SET settings = @settings, stamp_us = @stamp WHERE workspace_id = @ws AND slug = @slug AND stamp_us = @expected',
  );
  const refreshed = db.prepare(
    `UPDATE workspace_apps SET tools = COALESCE(@tools, tools), server = COALESCE(@server, server), refreshed_at = @at,
       refresh_error = @error, stamp_us = MAX(stamp_us + 1, @stamp) WHERE workspace_id = @ws AND slug = @slug`,
  );
  const remove = db.prepare('DELETE FROM workspace_apps WHERE workspace_id = ? AND slug = ? AND stamp_us = ?');
  const read = (ws: string, slug: string): StoredApp | null => {
    const row = get.get(ws, slug) as AppRow | undefined;
    return row ? appOfRow(row) : null;
  };
  return {
    snapshotKey: async (ws) => key.get({ ws }) as string,
    list: async (ws) => (list.all(ws) as AppRow[]).map(appOfRow),
    get: async (ws, slug) => read(ws, slug),
    create: (ws, settings, opts) =>
      commit.run(() => {
        if ((count.get(ws) as number) >= opts.limit) return { ok: false, reason: 'limit_reached' as const };
        const taken = (slug: string) => opts.reserved.has(slug) || get.get(ws, slug) !== undefined;
        if (!opts.deriveSlug && taken(settings.slug)) return { ok: false, reason: 'slug_taken' as const };
        const slug = firstFreeSlug(settings.slug, taken, 30);
        const stamp = clock.next();
        insert.run({ ws, slug, settings: JSON.stringify({ ...settings, slug }), stamp, created: new Date().toISOString() });
        return { ok: true as const, app: read(ws, slug) as StoredApp };
      }),
    replace: (ws, slug, expected, settings) =>
      commit.run(() => {
        const changed = update.run({ ws, slug, settings: JSON.stringify({ ...settings, slug }), stamp: clock.next(expected), expected }).changes === 1;
        return changed ? { ok: true as const, app: read(ws, slug) as StoredApp } : { ok: false as const, current: read(ws, slug) };
      }),
    recordRefresh: (ws, slug, outcome, at) =>
      commit.run(() => {
        const found = 'tools' in outcome;
        const params = {
          ws,
          slug,
          at,
          tools: found ? JSON.stringify(outcome.tools) : null,
          server: found ? JSON.stringify(outcome.server) : null,
          error: found ? null : outcome.error,
          stamp: clock.next(),
        };
        return refreshed.run(params).changes === 1 ? read(ws, slug) : null;
      }),
    remove: (ws, slug, expected) =>
      commit.run(() => {
        if (remove.run(ws, slug, expected).changes === 1) return 'removed' as const;
        return get.get(ws, slug) === undefined ? ('missing' as const) : ('stale' as const);
      }),
  };
}
