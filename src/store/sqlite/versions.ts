// The documents' kept versions on SQLite (port/documents.ts): kept by each document write inside its
// savepoint (document-table.ts), read by the primary key. The current version's row holds the
// document's text (migrations/013): a document read takes it from there.
import type { VersionMeta, VersionRepository } from '../port';
import { entryOfRow, keptOfRow, NO_VERSION_ABOVE, versionStatements, type DocumentTable, type VersionRow } from '../shared/versions';
import type { Db } from './database';

export function sqliteVersions<T>(db: Db, table: DocumentTable) {
  const sql = versionStatements(table);
  const keep = db.prepare(sql.keep);
  const list = db.prepare(sql.list);
  const get = db.prepare(sql.get);
  const prune = db.prepare(sql.prune);
  const repository: VersionRepository<T> = {
    list: async (id, before, limit) => (list.all({ id, before: before ?? NO_VERSION_ABOVE, limit }) as VersionRow[]).map(entryOfRow),
    get: async (id, version) => {
      const row = get.get({ id, version }) as VersionRow | undefined;
      return row ? keptOfRow<T>(row) : null;
    },
    prune: async (keepCount, limit) => prune.run({ keep: keepCount, limit }).changes,
  };
  return {
    /** Keeps a write's version (call inside the write's savepoint, after the document's row). */
    keep: (id: string, version: number, stamp: number, meta: VersionMeta, json: string) =>
      void keep.run({ id, version, stamp, author: meta.author, changes: JSON.stringify(meta.changes), document: json }),
    repository,
  };
}
