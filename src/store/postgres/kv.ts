// The workspaces' key-value entries on PostgreSQL (see kvRepository in store/runs.ts). Keys are
// COLLATE "C" (migrations/001_init.sql): compared byte-wise, as SQLite does, so a prefix is a range.
import type { KvRepository } from '../port';
import { prefixUpperBound } from '../shared/kv';
import { KV_SET_WITHIN_LIMIT, numberedParams } from '../shared/statements';
import type { PgDatabase } from './database';
import { holdsNul } from './documents';

const KV_SET_PG = numberedParams(KV_SET_WITHIN_LIMIT, ['ws', 'key', 'value', 'now', 'limit']);

export function pgKvRepository(db: PgDatabase): KvRepository {
  return {
    // A key PostgreSQL cannot hold (U+0000) is one no entry has.
    get: async (ws, key) => {
      if (holdsNul(key)) return undefined;
      const row = await db.row<{ value: string }>('SELECT value FROM kv_entries WHERE workspace_id = $1 AND key = $2', [ws, key]);
      return row === undefined ? undefined : JSON.parse(row.value);
    },
    // Prefix match by range, so `%` and `_` in a prefix are plain characters.
    list: async (ws, prefix, limit) => {
      if (holdsNul(prefix)) return [];
      const upper = prefixUpperBound(prefix);
      const rows =
        upper === null
          ? await db.rows<{ key: string }>('SELECT key FROM kv_entries WHERE workspace_id = $1 AND key >= $2 ORDER BY key LIMIT $3', [ws, prefix, limit])
          : await db.rows<{ key: string }>('SELECT key FROM kv_entries WHERE workspace_id = $1 AND key >= $2 AND key < $3 ORDER BY key LIMIT $4', [ws, prefix, upper, limit]);
      return rows.map((r) => r.key);
    },
    set: async (ws, key, value, maxKeys = Number.MAX_SAFE_INTEGER) => {
      if (holdsNul(key)) throw new Error('kv: a key cannot contain U+0000 (NUL)');
      const json = JSON.stringify(value);
      // Only the run workers' tools write here: acknowledged once visible, like the runs' progress.
      const written = await db.transaction((sql) => sql.count(KV_SET_PG, [ws, key, json, new Date().toISOString(), maxKeys]), { ack: 'visible' });
      return written === 1;
    },
    delete: async (ws, key) =>
      !holdsNul(key) && (await db.transaction((sql) => sql.count('DELETE FROM kv_entries WHERE workspace_id = $1 AND key = $2', [ws, key]), { ack: 'visible' })) > 0,
  };
}
