// The documents (agents, workflows) and workspaces on PostgreSQL, for any number of
// replicas on one database. Every read asks the database, in a query shared by the reads that arrive
// together (held versions are confirmed, not trusted: heldFind, list-versions.ts). Each write is one
// statement with the rows that follow it (document-writes.ts). A replace is compare-and-set on the
// stored stamp (the UPDATE's affected-row count decides which writer wins); a create holds a
// transaction-scoped advisory lock on (table, workspace) while it counts and picks its slug, with
// the UNIQUE (workspace_id, slug) constraint as the backstop. Stamps come from the writing process's
// clock pushed past the stored stamp (StampClock), so a document's stamps grow whatever the replicas' clocks say.
import type { StampClock } from '../../domain/stamps';
import { agentSchedules, workflowSchedules } from '../../domain/triggers';
import type { Agent, Workflow } from '../../domain/types';
import { isUuid } from '../../ids';
import type {
  AgentRepository,
  ChannelTaken,
  CreateOptions,
  CreateOutcome,
  DocumentRecord,
  ReplaceOutcome,
  SecretRow,
  VersionMeta,
  WorkflowRepository,
  WorkspaceRepository,
} from '../port';
import {
  chooseSlug,
  listedName,
  newVersion,
  SLUGGED,
  stamped,
  StoredVersion,
  versionOfRow,
  wantedSlug,
  type DocumentRow,
  type DocumentShape,
} from '../shared/documents';
import { channelBindings, channelTaken, ChannelTakenError, type ChannelBinding } from '../shared/channel-messages';
import { RowCache } from '../shared/row-cache';
import type { NumberedStatement } from '../shared/statements';
import { CoalescedLookup } from './coalesced-lookup';
import { BALANCE, setBalance } from './credits';
import { isUniqueViolation, retried, type PgDatabase, type Sql } from './database';
import { agentList, workflowList } from './document-lists';
import { bindingFollower, documentStatements, scheduleFollower, triggerFollower, writeKeys, type Follower } from './document-writes';
import { VersionedLists, type ListedTable } from './list-versions';
import { pgVersions, versionValues } from './versions';

/** The document text each table's held versions may take (see find). */
const HELD_VERSIONS_BYTES = 32 * 1024 * 1024;
/** The list text each table's held lists may take (see list-versions.ts). */
const HELD_LISTS_BYTES = 8 * 1024 * 1024;

/**
 * PostgreSQL text cannot hold U+0000 (SQLite's can): a value with one is never stored, so a lookup
 * by it finds nothing, and is not sent (the server would refuse the whole statement).
 */
export const holdsNul = (text: string): boolean => text.includes('\u0000');

/** The name column's text: U+0000 (which it cannot hold) becomes U+FFFD; the list then reads the name from the document (see listName). */
export const nameColumn = (name: string): string => listedName(name).replaceAll('\u0000', '\uFFFD');

type Row = DocumentRow;

export interface DocumentSpec<T, W> {
  table: ListedTable;
  /** How the document carries its slug and version (agents' and workflows' by default: shared/documents.ts). */
  shape?: DocumentShape;
  maxSlugLength: number;
  /** Columns besides the common ones, kept in step with the document (for lists and lookups). */
  columns: Record<string, (doc: T) => string | number | null>;
  /** The rows that follow the document, written by its write's statement; `extra` is what the caller passed with the write. */
  followers: Follower<T, W>[];
}

type Doc = { updated_at?: string };

/**
 * `ref` is an id (UUID) or a slug. A version this process holds is answered once the database
 * confirmed that its stamp is still the stored one: one coalesced query for all the reads that
 * arrived meanwhile (coalesced-lookup.ts), which sends the document only when the stamp moved, so the
 * held parse, encoded reply and views are reused. Otherwise one query by `ref`, which sends the
 * document only when this process holds another version of it.
 */
function heldFind<T>(db: PgDatabase, table: string, held: RowCache<StoredVersion<T>>) {
  type Found = Row | (Omit<Row, 'document'> & { document: null });
  const current = new CoalescedLookup<number, Found>(async (batch) => {
    const rows = await db.rows<Found>(
      `SELECT d.id, d.workspace_id, d.slug, d.version, d.stamp_us, CASE WHEN d.stamp_us = t.stamp_us THEN NULL ELSE d.document END AS document
       FROM unnest($1::text[], $2::bigint[]) AS t (id, stamp_us) JOIN ${table} AS d ON d.id = t.id`,
      [[...batch.keys()], [...batch.values()]],
    );
    return new Map(rows.map((r) => [r.id, r]));
  });
  const answer = (row: Found | undefined, known: StoredVersion<T> | undefined): DocumentRecord<T> | null => {
    if (!row) return null;
    if (row.document === null) return known as StoredVersion<T>;
    const record = versionOfRow<T>(row);
    held.set(record);
    return record;
  };
  return async (workspaceId: string, ref: string): Promise<DocumentRecord<T> | null> => {
    if (holdsNul(ref)) return null;
    const byUuid = isUuid(ref) ? ref.toLowerCase() : undefined;
    const heldId = byUuid ?? held.idOfSlug(workspaceId, ref);
    const known = heldId === undefined ? undefined : held.get(workspaceId, heldId);
    if (known) {
      // Held under this workspace, and an id is never reused: the row by that id is this document.
      // Gone (deleted), it may have left its slug to another: asked by `ref` below.
      const row = await current.get(known.id, known.stampMicros);
      if (row) return answer(row, known);
      if (byUuid) return null;
    }
    const [column, value] = byUuid ? ['id', byUuid] : ['slug', ref];
    const row = await db.row<Found>(
      `SELECT id, workspace_id, slug, version, stamp_us, CASE WHEN id = $3 AND stamp_us = $4 THEN NULL ELSE document END AS document
       FROM ${table} WHERE workspace_id = $1 AND ${column} = $2`,
      [workspaceId, value, known?.id ?? null, known?.stampMicros ?? null],
    );
    return answer(row, known);
  };
}

/** The stored version of a document, read whole. */
async function storedById<T>(sql: Sql, table: string, workspaceId: string, id: string): Promise<StoredVersion<T> | null> {
  const row = await sql.row<Row>(`SELECT id, workspace_id, slug, version, stamp_us, document FROM ${table} WHERE workspace_id = $1 AND id = $2`, [
    workspaceId,
    id,
  ]);
  return row ? versionOfRow<T>(row) : null;
}

/** Whether a document write's statement (document-writes.ts) wrote the document. */
const wrote = async (sql: Sql, statement: NumberedStatement, params: unknown[]) => (await sql.row<{ n: number }>(statement.text, params))!.n === 1;

/** The slug and version stored with stamp `expected`: held (from the find the caller made), or read. */
async function storedAt<T>(db: PgDatabase, table: string, held: RowCache<StoredVersion<T>>, workspaceId: string, id: string, expected: number) {
  const known = held.get(workspaceId, id);
  if (known?.stampMicros === expected) return known;
  const row = await db.row<{ slug: string; version: number; stamp_us: number }>(
    `SELECT slug, version, stamp_us FROM ${table} WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return row?.stamp_us === expected ? row : null;
}

// Long because a table's reads and writes share its held versions and lists (see heldFind).
export function documentTable<T extends Doc, W>(db: PgDatabase, clock: StampClock, spec: DocumentSpec<T, W>) {
  const { table, followers } = spec;
  const shape = spec.shape ?? SLUGGED;
  const extra = Object.keys(spec.columns);
  // The unique constraint PostgreSQL names for UNIQUE (workspace_id, slug) (migrations/001_init.sql).
  const slugConstraint = `${table}_workspace_id_slug_key`;
  const { insert, update, deletion } = documentStatements(table, extra, followers);

  /** A write's parameters: the statement's own, the document's columns, and those of the followers it writes. */
  const values = (
    statement: NumberedStatement,
    written: readonly Follower<T, W>[],
    workspaceId: string,
    id: string,
    doc: T | null,
    more: W | undefined,
    own: Record<string, unknown>,
  ) => {
    const params: Record<string, unknown> = { ...writeKeys(workspaceId, id), ...own };
    for (const c of doc ? extra : []) params[`col_${c}`] = spec.columns[c]!(doc as T);
    const nowMs = Date.now();
    for (const f of written) Object.assign(params, f.values(id, doc, more, nowMs, workspaceId));
    return statement.values(params);
  };

  const createTx = async (
    sql: Sql,
    workspaceId: string,
    id: string,
    doc: T,
    opts: CreateOptions,
    more: W | undefined,
    meta: (stored: T) => VersionMeta,
  ): Promise<CreateOutcome<T>> => {
    // Creates in one workspace take turns from here to their commit: the count and the free slug
    // they read stay true until they insert (a lock's waiter reads, under READ COMMITTED, what its holder committed).
    await sql.row('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${table}:${workspaceId}`]);
    const slugs = await sql.rows<{ slug: string }>(`SELECT slug FROM ${table} WHERE workspace_id = $1`, [workspaceId]);
    const taken = new Set(slugs.map((r) => r.slug));
    const slug = chooseSlug(taken.size, wantedSlug(doc, shape), opts, spec.maxSlugLength, (s) => taken.has(s));
    if (slug === 'limit_reached' || slug === 'slug_taken') return { ok: false, reason: slug };
    const version = newVersion(workspaceId, id, doc, slug, clock.next(), opts, shape);
    if (!(version instanceof StoredVersion)) return version;
    const own = { slug, stamp: version.stampMicros, document: version.json, created: new Date().toISOString(), ...versionValues(meta(version.document)) };
    await wrote(sql, insert, values(insert, followers, workspaceId, id, version.document, more, own));
    return { ok: true, record: version };
  };

  /**
   * One statement, with no transaction, that writes only if the stamp is still `expected` (the one
   * winner of a compare-and-set). A stamp names one version of one document (stamps only grow, ids
   * are never reused), so the slug and version held or read with it are the stored ones while it is.
   */
  const replace = async (workspaceId: string, id: string, expected: number, doc: T, meta: VersionMeta, more?: W): Promise<ReplaceOutcome<T>> => {
    const stored = await storedAt(db, table, held, workspaceId, id, expected);
    if (!stored) return { ok: false, current: await storedById<T>(db, table, workspaceId, id) };
    const stampMicros = clock.next(expected);
    const { doc: final, json } = stamped(doc, stampMicros, stored.slug, stored.version + 1, shape);
    // The rows that follow the stored version are as it declared them: only those this write changes are written.
    const before = 'document' in stored ? stored.document : undefined;
    const changed = followers.filter((f) => before === undefined || !f.unchanged(id, before, final, more));
    const statement = update(changed);
    const params = values(statement, changed, workspaceId, id, final, more, { stamp: stampMicros, document: json, expected, ...versionValues(meta) });
    // Another writer's replace committed first (this one may have waited for it, then found the stamp moved).
    if (!(await retried(() => wrote(db, statement, params)))) return { ok: false, current: await storedById<T>(db, table, workspaceId, id) };
    const record = new StoredVersion(id, workspaceId, stored.slug, stored.version + 1, stampMicros, json, final);
    held.set(record);
    return { ok: true, record };
  };

  // The versions read or written lately: each answered only once the database confirmed its stamp
  // (see heldFind), so a write's own version is held too (the next read of it sends no document).
  const held = new RowCache<StoredVersion<T>>(HELD_VERSIONS_BYTES);
  const lists = new VersionedLists(db, HELD_LISTS_BYTES);
  return {
    list: lists,
    find: heldFind<T>(db, table, held),
    /** Inserts a new document (version 1). With deriveSlug, `doc.slug` is a base to make unique. */
    create: async (workspaceId: string, id: string, doc: T, opts: CreateOptions, meta: (stored: T) => VersionMeta, more?: W): Promise<CreateOutcome<T>> => {
      try {
        const outcome = await db.transaction((sql) => createTx(sql, workspaceId, id, doc, opts, more, meta));
        if (outcome.ok) held.set(outcome.record as StoredVersion<T>);
        return outcome;
      } catch (err) {
        // The backstop: a slug inserted by a writer that did not take the lock. Another unique
        // violation (an id already used) is a fault.
        if (isUniqueViolation(err) && (err as { constraint?: string }).constraint === slugConstraint) return { ok: false, reason: 'slug_taken' };
        throw err;
      }
    },
    /** Writes `doc` if the stored stamp is still `expected`; otherwise returns what is stored. */
    replace,
    versions: pgVersions<T>(db, table),
    /** Deletes the document and the rows that follow it, in one statement; whether there was one. */
    remove: (workspaceId: string, id: string): Promise<boolean> =>
      retried(() => wrote(db, deletion, values(deletion, followers, workspaceId, id, null, undefined, {}))),
  };
}

export function pgAgentRepository(db: PgDatabase, clock: StampClock): AgentRepository {
  const table = documentTable<Agent, SecretRow[]>(db, clock, {
    table: 'agents',
    maxSlugLength: 160,
    columns: { name: (doc) => nameColumn(doc.name), status: (doc) => doc.status, team: (doc) => doc.space.team, folder: (doc) => doc.folder },
    followers: [scheduleFollower((_id, doc) => agentSchedules(doc)), triggerFollower, bindingFollower],
  });
  const taken = (workspaceId: string, id: string, doc: Agent) => (err: unknown) => bindingTaken(db, workspaceId, id, doc, err);
  return {
    list: (workspaceId) => agentList(db, table.list, workspaceId),
    find: (workspaceId, ref) => table.find(workspaceId, ref),
    create: (workspaceId, id, doc, opts, secrets, meta) => table.create(workspaceId, id, doc, opts, meta, secrets).catch(taken(workspaceId, id, doc)),
    replace: (workspaceId, id, expected, doc, secrets, meta) => table.replace(workspaceId, id, expected, doc, meta, secrets).catch(taken(workspaceId, id, doc)),
    versions: table.versions,
  };
}

/**
 * A write that the primary key of agent_channel_bindings refused (another agent holds an address
 * the document binds: document-writes.ts), as its outcome, naming that agent (null when it let go
 * meanwhile); any other failure as it was.
 */
async function bindingTaken(db: PgDatabase, workspaceId: string, id: string, doc: Agent, err: unknown): Promise<ChannelTaken> {
  const constraint = (err as { constraint?: string }).constraint;
  if (!isUniqueViolation(err) || (constraint !== 'agent_channel_bindings_pkey' && constraint !== 'agent_channel_bindings_mailbox')) throw err;
  const wanted = channelBindings(doc, workspaceId);
  for (const b of wanted) {
    const holder = await db.row<{ agentId: string }>(
      b.channel === 'email'
        ? `SELECT agent_id AS "agentId" FROM agent_channel_bindings WHERE channel = 'email' AND address = $2 AND $1::text IS NOT NULL`
        : 'SELECT agent_id AS "agentId" FROM agent_channel_bindings WHERE workspace_id = $1 AND channel = $3 AND address = $2',
      b.channel === 'email' ? [workspaceId, b.address] : [workspaceId, b.address, b.channel],
    );
    if (holder && holder.agentId !== id) return channelTaken(new ChannelTakenError(b, holder.agentId));
  }
  return channelTaken(new ChannelTakenError(wanted[0] as ChannelBinding, null));
}

export function pgWorkflowRepository(db: PgDatabase, clock: StampClock): WorkflowRepository {
  const table = documentTable<Workflow, undefined>(db, clock, {
    table: 'workflows',
    maxSlugLength: 80,
    columns: { name: (doc) => nameColumn(doc.name), enabled: (doc) => (doc.enabled ? 1 : 0), team: (doc) => doc.space?.team ?? null },
    // The workflow's schedule row follows it, like an agent's.
    followers: [scheduleFollower(workflowSchedules)],
  });
  return {
    list: (workspaceId) => workflowList(db, table.list, workspaceId),
    find: (workspaceId, ref) => table.find(workspaceId, ref),
    create: (workspaceId, id, doc, opts, meta) => table.create(workspaceId, id, doc, { ...opts, deriveSlug: false }, meta),
    replace: (workspaceId, id, expected, doc, meta) => table.replace(workspaceId, id, expected, doc, meta),
    remove: (workspaceId, id) => table.remove(workspaceId, id),
    versions: table.versions,
  };
}

export function pgWorkspaceRepository(db: PgDatabase): WorkspaceRepository {
  return {
    credits: async (workspaceId, initial) => {
      // Two statements, not one: a row another replica inserted after this statement's snapshot is
      // skipped by DO NOTHING and would be invisible to a SELECT in the same statement.
      await db.count('INSERT INTO workspaces (id, credits, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [
        workspaceId,
        initial,
        new Date().toISOString(),
      ]);
      return (await db.row<{ credits: number }>(BALANCE, [workspaceId]))!.credits;
    },
    setCredits: (workspaceId, amount) => db.transaction((sql) => setBalance(sql, workspaceId, amount)),
  };
}
