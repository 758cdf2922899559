// The workspaces' key-value entries on PostgreSQL. Keys are COLLATE "C" (migrations/001_init.sql):
// compared byte-wise, so a prefix is a range (shared/kv.ts).
import type { KvRepository } from '../port';
import { prefixUpperBound, storableKey, UnstorableKeyError } from '../shared/kv';
import { KV_SET_WITHIN_LIMIT, numbered } from '../shared/statements';
import type { PgDatabase } from './database';

const kvSet = numbered(KV_SET_WITHIN_LIMIT);

export function pgKvRepository(db: PgDatabase): KvRepository {
  return {
    // A key no entry can have (see storableKey).
    get: async (ws, key) => {
      if (!storableKey(key)) return undefined;
      const row = await db.row<{ value: string }>('SELECT value FROM kv_entries WHERE workspace_id = $1 AND key = $2', [ws, key]);
      return row === undefined ? undefined : JSON.parse(row.value);
    },
    // Prefix match by range, so `%` and `_` in a prefix are plain characters.
    list: async (ws, prefix, limit) => {
      if (!storableKey(prefix)) return [];
      const upper = prefixUpperBound(prefix);
      const rows =
        upper === null
          ? await db.rows<{ key: string }>('SELECT key FROM kv_entries WHERE workspace_id = $1 AND key >= $2 ORDER BY key LIMIT $3', [ws, prefix, limit])
          : await db.rows<{ key: string }>('SELECT key FROM kv_entries WHERE workspace_id = $1 AND key >= $2 AND key < $3 ORDER BY key LIMIT $4', [
              ws,
              prefix,
              upper,
              limit,
            ]);
      return rows.map((r) => r.key);
    },
    set: async (ws, key, value, maxKeys = Number.MAX_SAFE_INTEGER) => {
      if (!storableKey(key)) throw new UnstorableKeyError();
      const json = JSON.stringify(value);
      // Only the run workers' tools write here: acknowledged once visible, like the runs' progress.
      return (await db.visible.count(kvSet.text, kvSet.values({ ws, key, value: json, now: new Date().toISOString(), limit: maxKeys }))) === 1;
    },
    delete: async (ws, key) => storableKey(key) && (await db.visible.count('DELETE FROM kv_entries WHERE workspace_id = $1 AND key = $2', [ws, key])) > 0,
  };
}
