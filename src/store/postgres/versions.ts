// The documents' kept versions on PostgreSQL (port/documents.ts): kept by each document write's own
// statement (document-writes.ts), read by the primary key.
import type { VersionMeta, VersionRepository } from '../port';
import { numbered } from '../shared/statements';
import { entryOfRow, keptOfRow, NO_VERSION_ABOVE, versionStatements, versionTable, type DocumentTable, type VersionRow } from '../shared/versions';
import type { PgDatabase } from './database';

/** A write's parameters for the version its statement keeps (document-writes.ts, versionKept). */
export const versionValues = (meta: VersionMeta) => ({ author: meta.author, changes: JSON.stringify(meta.changes) });

export function pgVersions<T>(db: PgDatabase, table: DocumentTable): VersionRepository<T> {
  const sql = versionStatements(table);
  const list = numbered(sql.list);
  // The text is in the version's row (TOAST keeps it out of the row's page).
  const get = numbered(`SELECT version, stamp_us, author, changes, document FROM ${versionTable(table)} WHERE document_id = @id AND version = @version`);
  const prune = numbered(sql.prune);
  return {
    list: async (id, before, limit) => (await db.rows<VersionRow>(list.text, list.values({ id, before: before ?? NO_VERSION_ABOVE, limit }))).map(entryOfRow),
    get: async (id, version) => {
      const row = await db.row<VersionRow>(get.text, get.values({ id, version }));
      return row ? keptOfRow<T>(row) : null;
    },
    prune: (keep, limit) => db.count(prune.text, prune.values({ keep, limit })),
  };
}
