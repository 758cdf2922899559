// The persistence both document kinds share: rows keyed by id and unique by (workspace, slug), the
// whole document as JSON, and writes that are compare-and-set on the stored stamp. Each write runs
// synchronously in its own savepoint of a group commit (group-commit.ts), so it lands whole or not at
// all, and no other write can slip in between the stamp check and the update.
import type { SqliteStatement } from '../../sqlite-driver';
import type { Db } from './database';
import type { GroupCommit } from './group-commit';
import type { StampClock } from '../../domain/stamps';
import { isUuid } from '../../ids';
import type { CreateOptions, CreateOutcome, DocumentRecord, ListVersion, ReplaceOutcome, VersionMeta } from '../port';
import { chooseSlug, newVersion, SLUGGED, stamped, StoredVersion, versionOfRow, wantedSlug, type DocumentRow, type DocumentShape } from '../shared/documents';
import { ListCache } from '../shared/list-cache';
import { RowCache } from '../shared/row-cache';
import { versionTable, type DocumentTable } from '../shared/versions';
import { sqliteVersions, versionTextJoin } from './versions';

type Statement = SqliteStatement;

/**
 * The document text the row cache of each table may hold (UTF-16 code units, about bytes for JSON).
 * The encoded replies of the versions that were read live as long as they do: up to as much again.
 */
const ROW_CACHE_BYTES = 32 * 1024 * 1024;
/** What the list cache of each table may hold: lists, their encoded replies and entries (list-cache.ts). */
const LIST_CACHE_BYTES = 8 * 1024 * 1024;

export interface DocumentTableSpec<T extends { updated_at?: string }, W = undefined> {
  table: DocumentTable;
  /** How the document carries its slug and version (agents' and workflows' by default: shared/documents.ts). */
  shape?: DocumentShape;
  /** A query of one JSON text: the list of the workspace given as its one parameter. */
  listSql: string;
  maxSlugLength: number;
  /** Columns besides the common ones, kept in step with the document (for lists and lookups). */
  columns: Record<string, (doc: T) => string | number | null>;
  /** Further rows that must land in the same transaction as the document (e.g. triggers); `extra` is what the caller passed with the write. */
  afterWrite?: (id: string, doc: T, extra: W | undefined, workspaceId: string) => void;
  /** Rows that go with the document when it is removed (in the same transaction). */
  afterRemove?: (id: string) => void;
}

/** The statements of one document table (its extra columns named by the spec). */
function documentStatements(db: Db, spec: Pick<DocumentTableSpec<never>, 'table' | 'columns' | 'listSql'>) {
  const { table } = spec;
  const extra = Object.keys(spec.columns);
  // The document's text is its current version's (migrations 013 and 016): kept once, by the version's write.
  const selectFrom = `SELECT d.id, d.workspace_id, d.slug, d.version, d.stamp_us, t.document FROM ${table} AS d
    JOIN ${versionTable(table)} AS v ON v.document_id = d.id AND v.version = d.version ${versionTextJoin(table)}`;
  const byId = db.prepare(`${selectFrom} WHERE d.workspace_id = ? AND d.id = ?`);
  const bySlug = db.prepare(`${selectFrom} WHERE d.workspace_id = ? AND d.slug = ?`);
  // What a replace checks (a document's stamp) without reading the document itself.
  const versionOf = db.prepare(`SELECT slug, version, stamp_us FROM ${table} WHERE workspace_id = ? AND id = ?`);
  const slugTaken = db.prepare(`SELECT 1 FROM ${table} WHERE workspace_id = ? AND slug = ?`).pluck();
  const count = db.prepare(`SELECT COUNT(*) FROM ${table} WHERE workspace_id = ?`).pluck();
  const insert = db.prepare(
    `INSERT INTO ${table} (id, workspace_id, slug, version, stamp_us, created_at${extra.map((c) => `, ${c}`).join('')})
     VALUES (@id, @workspace_id, @slug, 1, @stamp_us, @created_at${extra.map((c) => `, @${c}`).join('')})`,
  );
  const update = db.prepare(
    `UPDATE ${table} SET version = version + 1, stamp_us = @stamp_us${extra.map((c) => `, ${c} = @${c}`).join('')}
     WHERE id = @id AND stamp_us = @expected_stamp_us`,
  );
  const remove = db.prepare(`DELETE FROM ${table} WHERE workspace_id = ? AND id = ?`);
  const listOf = db.prepare(spec.listSql).pluck();
  return { byId, bySlug, versionOf, slugTaken, count, insert, update, remove, listOf };
}

/** A lookup by id or slug that answers from the row cache, and fills it from the table. */
function cachedFind<T>(cache: RowCache<StoredVersion<T>>, byId: Statement, bySlug: Statement) {
  return (workspaceId: string, ref: string): DocumentRecord<T> | null => {
    const byUuid = isUuid(ref) ? ref.toLowerCase() : undefined;
    const id = byUuid ?? cache.idOfSlug(workspaceId, ref);
    let record = id === undefined ? undefined : cache.get(workspaceId, id);
    if (!record) {
      const row = (byUuid ? byId.get(workspaceId, byUuid) : bySlug.get(workspaceId, ref)) as DocumentRow | undefined;
      if (!row) return null;
      record = versionOfRow<T>(row);
      cache.set(record);
    }
    return record;
  };
}

export function createDocumentTable<T extends { updated_at?: string }, W = undefined, L = unknown>(
  db: Db,
  commit: GroupCommit,
  clock: StampClock,
  spec: DocumentTableSpec<T, W>,
) {
  const extra = Object.keys(spec.columns);
  const shape = spec.shape ?? SLUGGED;
  const columnValues = (doc: T) => Object.fromEntries(extra.map((c) => [c, spec.columns[c]!(doc)]));
  const { byId, bySlug, versionOf, slugTaken, count, insert, update, remove, listOf } = documentStatements(db, spec);

  /** What is stored under the id now (a compare-and-set that lost answers with it). */
  const stored = (workspaceId: string, id: string): ReplaceOutcome<T> => {
    const current = byId.get(workspaceId, id) as DocumentRow | undefined;
    return { ok: false, current: current ? versionOfRow<T>(current) : null };
  };

  const cache = new RowCache<StoredVersion<T>>(ROW_CACHE_BYTES);
  // Writes only drop lists, and a dropped list is rebuilt from the table: a group that fails to commit leaves none wrong.
  const lists = new ListCache<L>(LIST_CACHE_BYTES);
  commit.onRollback(() => cache.clear());
  const find = cachedFind<T>(cache, byId, bySlug);
  const versions = sqliteVersions<T>(db, spec.table);

  // createTx and replaceTx are the writes' work: each runs in its own savepoint (commit.run), whole or not at all.
  const createTx = (workspaceId: string, id: string, doc: T, opts: CreateOptions, extra: W | undefined, meta: (stored: T) => VersionMeta): CreateOutcome<T> => {
    const taken = (slug: string) => slugTaken.get(workspaceId, slug) !== undefined;
    const slug = chooseSlug(count.get(workspaceId) as number, wantedSlug(doc, shape), opts, spec.maxSlugLength, taken);
    if (slug === 'limit_reached' || slug === 'slug_taken') return { ok: false, reason: slug };
    const version = newVersion(workspaceId, id, doc, slug, clock.next(), opts, shape);
    if (!(version instanceof StoredVersion)) return version;
    insert.run({ id, workspace_id: workspaceId, slug, stamp_us: version.stampMicros, created_at: new Date().toISOString(), ...columnValues(version.document) });
    versions.keep(id, 1, version.stampMicros, meta(version.document), version.json);
    lists.drop(workspaceId);
    spec.afterWrite?.(id, version.document, extra, workspaceId);
    return { ok: true, record: version };
  };

  const replaceTx = (workspaceId: string, id: string, expectedStampMicros: number, doc: T, extra: W | undefined, meta: VersionMeta): ReplaceOutcome<T> => {
    const row = versionOf.get(workspaceId, id) as Pick<DocumentRow, 'slug' | 'version' | 'stamp_us'> | undefined;
    if (!row || row.stamp_us !== expectedStampMicros) return stored(workspaceId, id);
    const stampMicros = clock.next(row.stamp_us);
    const { doc: final, json } = stamped(doc, stampMicros, row.slug, row.version + 1, shape);
    // The compare-and-set itself is this UPDATE's count; the read above only refuses early. (Inside
    // the group's write transaction nothing else can change the row in between; the guarantee does
    // not rest on that.)
    if (update.run({ id, expected_stamp_us: expectedStampMicros, stamp_us: stampMicros, ...columnValues(final) }).changes !== 1) {
      return stored(workspaceId, id);
    }
    versions.keep(id, row.version + 1, stampMicros, meta, json);
    lists.drop(workspaceId);
    spec.afterWrite?.(id, final, extra, workspaceId);
    // Last, so a failure above (which rolls this write's savepoint back) leaves the old row cached,
    // which is then still the stored one; if the whole group fails to commit, the cache is cleared.
    // The next write of this document finds its parsed form here.
    const record = new StoredVersion(id, workspaceId, row.slug, row.version + 1, stampMicros, json, final);
    cache.set(record);
    return { ok: true, record };
  };

  return {
    find,
    /** The workspace's list (see ListCache: built by SQLite, held until one of its documents is written). */
    list: (workspaceId: string): ListVersion<L> => lists.get(workspaceId, () => listOf.get(workspaceId) as string),
    /** Inserts a new document (version 1). With deriveSlug, `doc.slug` is a base to make unique. */
    create: (workspaceId: string, id: string, doc: T, opts: CreateOptions, meta: (stored: T) => VersionMeta, extra?: W): Promise<CreateOutcome<T>> =>
      commit.run(() => createTx(workspaceId, id, doc, opts, extra, meta)),
    /** Writes `doc` if the stored stamp is still `expectedStampMicros`; otherwise returns what is stored. */
    replace: (workspaceId: string, id: string, expectedStampMicros: number, doc: T, meta: VersionMeta, extra?: W): Promise<ReplaceOutcome<T>> =>
      commit.run(() => replaceTx(workspaceId, id, expectedStampMicros, doc, extra, meta)),
    versions: versions.repository, // a removed document's go with it (the foreign key's cascade)
    remove: (workspaceId: string, id: string): Promise<boolean> =>
      commit.run(() => {
        cache.drop(workspaceId, id);
        lists.drop(workspaceId);
        const removed = remove.run(workspaceId, id).changes > 0;
        if (removed) spec.afterRemove?.(id);
        return removed;
      }),
  };
}
