// The workspaces' key-value entries on SQLite, written by the runs' kv tools.
import type { KvRepository } from '../port';
import { prefixUpperBound, storableKey, UnstorableKeyError } from '../shared/kv';
import { KV_SET_WITHIN_LIMIT } from '../shared/statements';
import type { Db } from './database';
import type { GroupCommit } from './group-commit';

export function kvRepository(db: Db, commit: GroupCommit): KvRepository {
  const get = db.prepare('SELECT value FROM kv_entries WHERE workspace_id = ? AND key = ?').pluck();
  // Prefix match by range, so `%` and `_` in a prefix are plain characters.
  const listRange = db.prepare('SELECT key FROM kv_entries WHERE workspace_id = ? AND key >= ? AND key < ? ORDER BY key LIMIT ?').pluck();
  const listFrom = db.prepare('SELECT key FROM kv_entries WHERE workspace_id = ? AND key >= ? ORDER BY key LIMIT ?').pluck();
  const set = db.prepare(KV_SET_WITHIN_LIMIT);
  const del = db.prepare('DELETE FROM kv_entries WHERE workspace_id = ? AND key = ?');
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
    set: async (ws, key, value, maxKeys = Number.MAX_SAFE_INTEGER) => {
      if (!storableKey(key)) throw new UnstorableKeyError();
      const json = JSON.stringify(value);
      return commit.run(() => set.run({ ws, key, value: json, now: new Date().toISOString(), limit: maxKeys }).changes === 1, 'visible');
    },
    delete: (ws, key) => commit.run(() => del.run(ws, key).changes > 0, 'visible'),
  };
}
