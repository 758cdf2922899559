// The documents' kept versions on SQLite (port/documents.ts): kept by each document write inside its
// savepoint (document-table.ts), read by the primary key. A version's text is a row of its own
// table, which its version names (migration 016): a list page reads the small rows only. A document
// read takes its text from its current version's (document-table.ts, versionTextJoin).
import type { VersionMeta, VersionRepository } from '../port';
import { entryOfRow, keptOfRow, NO_VERSION_ABOVE, versionStatements, versionTable, type DocumentTable, type VersionRow } from '../shared/versions';
import type { Db } from './database';

/** The table of a versions table's texts (migration 016). */
const textTable = (table: DocumentTable) => `${table.slice(0, -1)}_version_texts`;

/** The join that brings a version `v`'s text, as `t.document`. */
export const versionTextJoin = (table: DocumentTable) => `JOIN ${textTable(table)} AS t ON t.id = v.text_id`;

export function sqliteVersions<T>(db: Db, table: DocumentTable) {
  const sql = versionStatements(table);
  const versions = versionTable(table);
  // The text first, then its version naming it (in the write's savepoint: both or neither).
  const keepText = db.prepare(`INSERT INTO ${textTable(table)} (document) VALUES (?)`);
  const keep = db.prepare(
    `INSERT INTO ${versions} (document_id, version, stamp_us, author, changes, text_id) VALUES (@id, @version, @stamp, @author, @changes, @text_id)`,
  );
  const list = db.prepare(sql.list);
  const get = db.prepare(
    `SELECT v.version, v.stamp_us, v.author, v.changes, t.document FROM ${versions} AS v ${versionTextJoin(table)} WHERE v.document_id = @id AND v.version = @version`,
  );
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
    keep: (id: string, version: number, stamp: number, meta: VersionMeta, json: string) => {
      const text_id = keepText.run(json).lastInsertRowid;
      keep.run({ id, version, stamp, author: meta.author, changes: JSON.stringify(meta.changes), text_id });
    },
    repository,
  };
}
