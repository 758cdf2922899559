// The persistence both document kinds share: rows keyed by id and unique by (workspace, slug), the
// whole document as JSON, and writes that are compare-and-set on the stored stamp. Each write runs
// synchronously in its own savepoint of a group commit (group-commit.ts), so it lands whole or not at
// all, and no other write can slip in between the stamp check and the update.
import type { Db } from './db';
import type { GroupCommit } from './group-commit';
import { formatStamp, type StampClock } from '../domain/stamps';
import { firstFreeSlug } from '../domain/agent';
import { ListCache, type ListVersion } from './list-cache';
import { RowCache } from './row-cache';

/**
 * The document text the row cache of each table may hold (UTF-16 code units, about bytes for JSON).
 * The encoded replies of the versions that were read live as long as they do: up to as much again.
 */
const ROW_CACHE_BYTES = 32 * 1024 * 1024;
/** What the list cache of each table may hold: lists, their encoded replies and entries (list-cache.ts). */
const LIST_CACHE_BYTES = 8 * 1024 * 1024;

/** JSON text known to serialise a T (so it can be sent as is, without parsing it first). */
export type Serialized<T> = string & { readonly __serializes?: T };

export interface DocumentRecord<T> {
  id: string;
  workspaceId: string;
  slug: string;
  version: number;
  stampMicros: number;
  /** The stored document exactly as serialised: a read sends it as is. */
  json: Serialized<T>;
  /** The parsed document (parsed on first use). Shared by every reader of this version: never mutate it. */
  readonly document: T;
  /** The stamp as the document's `updated_at` text (the ETag's value). */
  readonly updatedAt: string;
}

/**
 * One stored version of a document. The row cache holds these, so the parse of the document and
 * the text of its stamp are done once per version, not once per request.
 */
export class StoredVersion<T> implements DocumentRecord<T> {
  private parsed: T | undefined;
  private stampText: string | undefined;

  constructor(
    readonly id: string,
    readonly workspaceId: string,
    readonly slug: string,
    readonly version: number,
    readonly stampMicros: number,
    readonly json: Serialized<T>,
    parsed?: T,
  ) {
    this.parsed = parsed;
  }

  get document(): T {
    return (this.parsed ??= JSON.parse(this.json) as T);
  }

  get updatedAt(): string {
    return (this.stampText ??= formatStamp(this.stampMicros));
  }
}

export type CreateOutcome<T> =
  | { ok: true; record: DocumentRecord<T> }
  | { ok: false; reason: 'slug_taken' | 'limit_reached' }
  | { ok: false; reason: 'too_large'; bytes: number };

export interface CreateOptions {
  /** With it, `doc.slug` is a base made unique (`base-2`, ...). */
  deriveSlug: boolean;
  /** The workspace's most documents of this kind. */
  limit: number;
  /** The most bytes the stored JSON may have (the workspace's document_bytes), if checked here. */
  maxBytes?: number;
}

export type ReplaceOutcome<T> = { ok: true; record: DocumentRecord<T> } | { ok: false; current: DocumentRecord<T> | null };

export interface DocumentTableSpec<T extends { slug?: string; updated_at?: string }, W = undefined> {
  table: 'agents' | 'workflows';
  /** A query of one JSON text: the list of the workspace given as its one parameter. */
  listSql: string;
  maxSlugLength: number;
  /** Columns besides the common ones, kept in step with the document (for lists and lookups). */
  columns: Record<string, (doc: T) => string | number>;
  /** Further rows that must land in the same transaction as the document (e.g. triggers); `extra` is what the caller passed with the write. */
  afterWrite?: (id: string, doc: T, extra: W | undefined, workspaceId: string) => void;
  /** Rows that go with the document when it is removed (in the same transaction). */
  afterRemove?: (id: string) => void;
}

/** A document's row as both stores keep it (PostgreSQL's too: postgres/documents.ts). */
export interface DocumentRow {
  id: string;
  workspace_id: string;
  slug: string;
  version: number;
  stamp_us: number;
  document: string;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(ref: string): boolean {
  return UUID_RE.test(ref);
}

export function createDocumentTable<T extends { slug?: string; updated_at?: string }, W = undefined, L = unknown>(
  db: Db,
  commit: GroupCommit,
  clock: StampClock,
  spec: DocumentTableSpec<T, W>,
) {
  const { table } = spec;
  const extra = Object.keys(spec.columns);
  const columnValues = (doc: T) => Object.fromEntries(extra.map((c) => [c, spec.columns[c]!(doc)]));
  const selectCols = 'id, workspace_id, slug, version, stamp_us, document';
  const byId = db.prepare(`SELECT ${selectCols} FROM ${table} WHERE workspace_id = ? AND id = ?`);
  const bySlug = db.prepare(`SELECT ${selectCols} FROM ${table} WHERE workspace_id = ? AND slug = ?`);
  // What a replace checks (a document's stamp) without reading the document itself.
  const versionOf = db.prepare(`SELECT slug, version, stamp_us FROM ${table} WHERE workspace_id = ? AND id = ?`);
  const slugTaken = db.prepare(`SELECT 1 FROM ${table} WHERE workspace_id = ? AND slug = ?`).pluck();
  const count = db.prepare(`SELECT COUNT(*) FROM ${table} WHERE workspace_id = ?`).pluck();
  const insert = db.prepare(
    `INSERT INTO ${table} (id, workspace_id, slug, version, stamp_us, document, created_at${extra.map((c) => `, ${c}`).join('')})
     VALUES (@id, @workspace_id, @slug, 1, @stamp_us, @document, @created_at${extra.map((c) => `, @${c}`).join('')})`,
  );
  const update = db.prepare(
    `UPDATE ${table} SET version = version + 1, stamp_us = @stamp_us, document = @document${extra.map((c) => `, ${c} = @${c}`).join('')}
     WHERE id = @id AND stamp_us = @expected_stamp_us`,
  );
  const remove = db.prepare(`DELETE FROM ${table} WHERE workspace_id = ? AND id = ?`);
  const listOf = db.prepare(spec.listSql).pluck();

  const toRecord = (row: DocumentRow) => new StoredVersion<T>(row.id, row.workspace_id, row.slug, row.version, row.stamp_us, row.document);

  const cache = new RowCache<StoredVersion<T>>(ROW_CACHE_BYTES);
  // Writes only drop lists, and a dropped list is rebuilt from the table: a group that fails to commit leaves none wrong.
  const lists = new ListCache<L>(LIST_CACHE_BYTES);
  commit.onRollback(() => cache.clear());
  const find = (workspaceId: string, ref: string): DocumentRecord<T> | null => {
    const byUuid = isUuid(ref) ? ref.toLowerCase() : undefined;
    const id = byUuid ?? cache.idOfSlug(workspaceId, ref);
    let record = id === undefined ? undefined : cache.get(workspaceId, id);
    if (!record) {
      const row = (byUuid ? byId.get(workspaceId, byUuid) : bySlug.get(workspaceId, ref)) as DocumentRow | undefined;
      if (!row) return null;
      record = toRecord(row);
      cache.set(record);
    }
    return record;
  };

  /** Stamps the document and serialises it; the stamp is the document's own `updated_at`. */
  const stamped = (doc: T, stampMicros: number, slug: string): { doc: T; json: string } => {
    // Documents always have both members (normalised, or read back): spreading keeps their order.
    const final = { ...doc, slug, updated_at: formatStamp(stampMicros) };
    return { doc: final, json: JSON.stringify(final) };
  };

  // createTx and replaceTx are the writes' work: each runs in its own savepoint (commit.run), whole or not at all.
  const createTx = (workspaceId: string, id: string, doc: T, opts: CreateOptions, extra: W | undefined): CreateOutcome<T> => {
    const { deriveSlug, limit } = opts;
    if ((count.get(workspaceId) as number) >= limit) return { ok: false, reason: 'limit_reached' };
    const wanted = doc.slug as string;
    const taken = (slug: string) => slugTaken.get(workspaceId, slug) !== undefined;
    let slug = wanted;
    if (deriveSlug) slug = firstFreeSlug(wanted, taken, spec.maxSlugLength);
    else if (taken(wanted)) return { ok: false, reason: 'slug_taken' };
    const stampMicros = clock.next();
    const { doc: final, json } = stamped(doc, stampMicros, slug);
    // The caller measured the document with the slug it asked for; a derived slug's suffix may add a few bytes.
    const bytes = Buffer.byteLength(json);
    if (opts.maxBytes !== undefined && bytes > opts.maxBytes) return { ok: false, reason: 'too_large', bytes };
    insert.run({ id, workspace_id: workspaceId, slug, stamp_us: stampMicros, document: json, created_at: new Date().toISOString(), ...columnValues(final) });
    lists.drop(workspaceId);
    spec.afterWrite?.(id, final, extra, workspaceId);
    return { ok: true, record: new StoredVersion(id, workspaceId, slug, 1, stampMicros, json, final) };
  };

  const replaceTx = (workspaceId: string, id: string, expectedStampMicros: number, doc: T, extra: W | undefined): ReplaceOutcome<T> => {
    const row = versionOf.get(workspaceId, id) as Pick<DocumentRow, 'slug' | 'version' | 'stamp_us'> | undefined;
    if (!row || row.stamp_us !== expectedStampMicros) {
      const current = byId.get(workspaceId, id) as DocumentRow | undefined;
      return { ok: false, current: current ? toRecord(current) : null };
    }
    const stampMicros = clock.next(row.stamp_us);
    const { doc: final, json } = stamped(doc, stampMicros, row.slug);
    // The compare-and-set itself is this UPDATE's count; the read above only refuses early. (Inside
    // the group's write transaction nothing else can change the row in between; the guarantee does
    // not rest on that.)
    if (update.run({ id, expected_stamp_us: expectedStampMicros, stamp_us: stampMicros, document: json, ...columnValues(final) }).changes !== 1) {
      const current = byId.get(workspaceId, id) as DocumentRow | undefined;
      return { ok: false, current: current ? toRecord(current) : null };
    }
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
    create: (workspaceId: string, id: string, doc: T, opts: CreateOptions, extra?: W): Promise<CreateOutcome<T>> =>
      commit.run(() => createTx(workspaceId, id, doc, opts, extra)),
    /** Writes `doc` if the stored stamp is still `expectedStampMicros`; otherwise returns what is stored. */
    replace: (workspaceId: string, id: string, expectedStampMicros: number, doc: T, extra?: W): Promise<ReplaceOutcome<T>> =>
      commit.run(() => replaceTx(workspaceId, id, expectedStampMicros, doc, extra)),
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
