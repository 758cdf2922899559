// The workspaces' key-value entries on PostgreSQL. Keys are COLLATE "C" (migrations/001_init.sql):
// compared byte-wise, so a prefix is a range (shared/kv.ts).
import type { KvRepository } from '../port';
import { prefixUpperBound, storableKey, UnstorableKeyError } from '../shared/kv';
import { KV_EVENT, KV_SET_WITHIN_LIMIT, numbered } from '../shared/statements';
import type { PgDatabase } from './database';

const kvSet = numbered(KV_SET_WITHIN_LIMIT);
// A change and its event in one statement (the event only when the change was made: see KvWriteOrigin).
const kvSetEmitting = numbered(`WITH changed AS (${KV_SET_WITHIN_LIMIT} RETURNING 1),
  emitted AS (${KV_EVENT} AND EXISTS (SELECT 1 FROM changed))
  SELECT COUNT(*)::int AS n FROM changed`);
const kvDeleteEmitting = numbered(`WITH changed AS (DELETE FROM kv_entries WHERE workspace_id = @ws AND key = @key RETURNING 1),
  emitted AS (${KV_EVENT} AND EXISTS (SELECT 1 FROM changed))
  SELECT COUNT(*)::int AS n FROM changed`);

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
    set: async (ws, key, value, maxKeys = Number.MAX_SAFE_INTEGER, origin) => {
      if (!storableKey(key)) throw new UnstorableKeyError();
      const json = JSON.stringify(value);
      const params = { ws, key, value: json, now: new Date().toISOString(), limit: maxKeys };
      // Only the run workers' tools write here: acknowledged once visible, like the runs' progress.
      if (!origin) return (await db.visible.count(kvSet.text, kvSet.values(params))) === 1;
      const event = { event_id: origin.eventId, event: 'key.set', payload: JSON.stringify({ key, value }), chain: origin.chain };
      return (await db.visible.row<{ n: number }>(kvSetEmitting.text, kvSetEmitting.values({ ...params, ...event })))!.n === 1;
    },
    delete: async (ws, key, origin) => {
      if (!storableKey(key)) return false;
      if (!origin) return (await db.visible.count('DELETE FROM kv_entries WHERE workspace_id = $1 AND key = $2', [ws, key])) > 0;
      const event = { event_id: origin.eventId, event: 'key.deleted', payload: JSON.stringify({ key }), chain: origin.chain, now: new Date().toISOString() };
      return (await db.visible.row<{ n: number }>(kvDeleteEmitting.text, kvDeleteEmitting.values({ ws, key, ...event })))!.n > 0;
    },
  };
}
