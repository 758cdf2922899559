// What both adapters run alike for the documents' kept versions (port/documents.ts): the statements,
// with `@name` parameters (PostgreSQL's adapter numbers them), and the rows read back.
import type { KeptVersion, VersionEntry } from '../port';

export type DocumentTable = 'agents' | 'workflows' | 'skills' | 'eval_datasets';

/** The versions' table of a document table (`agent_versions`, `workflow_versions`, `skill_versions`, `eval_dataset_versions`). */
export const versionTable = (table: DocumentTable) => `${table.slice(0, -1)}_versions`;

/** A version's row as both stores keep it. */
export interface VersionRow {
  version: number;
  stamp_us: number | string;
  author: string | null;
  changes: string;
  document?: string;
}

/**
 * The statements of one versions table that read or delete its rows' own columns, alike in both
 * stores (where each keeps a version's text differs: SQLite in a table of its own, migration 016).
 * Parameters by name.
 */
export function versionStatements(table: DocumentTable) {
  const versions = versionTable(table);
  return {
    /** A page, newest first, by the primary key: @id, @before, @limit. */
    list: `SELECT version, stamp_us, author, changes FROM ${versions} WHERE document_id = @id AND version < @before ORDER BY version DESC LIMIT CAST(@limit AS INTEGER)`,
    /**
     * Up to @limit versions older than their document's newest @keep that no run names, deleted.
     * Each document's old versions are a range of the primary key; runs_by_target answers whether a
     * run names one.
     */
    prune: `DELETE FROM ${versions} WHERE (document_id, version) IN (
      SELECT v.document_id, v.version FROM ${table} AS d JOIN ${versions} AS v ON v.document_id = d.id AND v.version <= d.version - @keep
      WHERE NOT EXISTS (SELECT 1 FROM runs AS r WHERE r.target_id = v.document_id AND r.target_version = v.version)
      LIMIT CAST(@limit AS INTEGER))`,
  };
}

/** The version `before` a first page starts under (above any version number). */
export const NO_VERSION_ABOVE = 2 ** 31 - 1;

export const entryOfRow = (row: VersionRow): VersionEntry => ({
  version: row.version,
  stampMicros: Number(row.stamp_us),
  author: row.author,
  changesJson: row.changes as VersionEntry['changesJson'],
});

export const keptOfRow = <T>(row: VersionRow): KeptVersion<T> => ({ ...entryOfRow(row), json: row.document as KeptVersion<T>['json'] });
