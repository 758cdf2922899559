// The workspaces' key-value entries on SQLite, written by the runs' kv tools.
import type { KvRepository, KvWriteOrigin } from '../port';
import { prefixUpperBound, storableKey, UnstorableKeyError } from '../shared/kv';
import { KV_EVENT, KV_SET_WITHIN_LIMIT } from '../shared/statements';
import type { Db } from './database';
import type { GroupCommit } from './group-commit';

export function kvRepository(db: Db, commit: GroupCommit): KvRepository {
  const get = db.prepare('SELECT value FROM kv_entries WHERE workspace_id = ? AND key = ?').pluck();
  // Prefix match by range, so `%` and `_` in a prefix are plain characters.
  const listRange = db.prepare('SELECT key FROM kv_entries WHERE workspace_id = ? AND key >= ? AND key < ? ORDER BY key LIMIT CAST(? AS INTEGER)').pluck();
  const listFrom = db.prepare('SELECT key FROM kv_entries WHERE workspace_id = ? AND key >= ? ORDER BY key LIMIT CAST(? AS INTEGER)').pluck();
  const set = db.prepare(KV_SET_WITHIN_LIMIT);
  const del = db.prepare('DELETE FROM kv_entries WHERE workspace_id = ? AND key = ?');
  const emit = db.prepare(KV_EVENT);
  // The change's event, in the change's savepoint (a change undone takes its event with it).
  const emitted = (ws: string, event: string, payload: object, origin: KvWriteOrigin | undefined, now: string) => {
    if (origin) emit.run({ event_id: origin.eventId, ws, event, payload: JSON.stringify(payload), chain: origin.chain, now });
  };
  return {
    // A key no entry can have (see storableKey) finds nothing.
    get: async (ws, key) => {
      const value = get.get(ws, key) as string | undefined;
      return value === undefined ? undefined : JSON.parse(value);
    },
    list: async (ws, prefix, limit) => {
      if (!storableKey(prefix)) return [];
      const upper = prefixUpperBound(prefix);
      return (upper === null ? listFrom.all(ws, prefix, limit) : listRange.all(ws, prefix, upper, limit)) as string[];
    },
    // Only the run workers' tools write here: acknowledged once committed, like the runs' progress.
    set: async (ws, key, value, maxKeys = Number.MAX_SAFE_INTEGER, origin) => {
      if (!storableKey(key)) throw new UnstorableKeyError();
      const json = JSON.stringify(value);
      const now = new Date().toISOString();
      return commit.run(() => {
        if (set.run({ ws, key, value: json, now, limit: maxKeys }).changes !== 1) return false;
        emitted(ws, 'key.set', { key, value }, origin, now);
        return true;
      }, 'visible');
    },
    delete: (ws, key, origin) =>
      commit.run(() => {
        if (del.run(ws, key).changes === 0) return false;
        emitted(ws, 'key.deleted', { key }, origin, new Date().toISOString());
        return true;
      }, 'visible'),
  };
}
