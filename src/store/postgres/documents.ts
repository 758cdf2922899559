// The documents (agents, workflows), connections and workspaces on PostgreSQL, for any number of
// replicas on one database. Every read asks the database, in a query shared by the reads that arrive
// together (held versions are confirmed, not trusted: heldFind, list-versions.ts). A replace is compare-and-set on the
// stored stamp (the UPDATE's affected-row count decides which writer wins); a create holds a
// transaction-scoped advisory lock on (table, workspace) while it counts and picks its slug, with
// the UNIQUE (workspace_id, slug) constraint as the backstop. Stamps come from the database's clock.
import { agentSchedules, workflowSchedules } from '../../domain/triggers';
import type { Agent, Connection, Workflow } from '../../domain/types';
import { isUuid } from '../../ids';
import type { AgentRepository, ConnectionRepository, CreateOptions, CreateOutcome, DocumentRecord, ReplaceOutcome, SecretRow, WorkflowRepository, WorkspaceRepository } from '../port';
import { chooseSlug, listedName, newVersion, stamped, StoredVersion, versionOfRow, type DocumentRow } from '../shared/documents';
import { RowCache } from '../shared/row-cache';
import { triggerPlan } from '../shared/triggers';
import { CoalescedLookup } from './coalesced-lookup';
import { isUniqueViolation, type PgDatabase, type Sql } from './database';
import { agentList, workflowList } from './document-lists';
import { bumpListVersion, VersionedLists } from './list-versions';
import { removeSchedules, syncSchedules } from './schedules';

/** The document text each table's held versions may take (see find). */
const HELD_VERSIONS_BYTES = 32 * 1024 * 1024;
/** The list text each table's held lists may take (see list-versions.ts). */
const HELD_LISTS_BYTES = 8 * 1024 * 1024;

/** The database's clock in microseconds (the whole stamp: PostgreSQL keeps microseconds). */
const NOW_US = '(extract(epoch from clock_timestamp()) * 1000000)::bigint';

/**
 * PostgreSQL text cannot hold U+0000 (SQLite's can): a value with one is never stored, so a lookup
 * by it finds nothing, and is not sent (the server would refuse the whole statement).
 */
export const holdsNul = (text: string): boolean => text.includes('\u0000');

/** The name column's text: U+0000 (which it cannot hold) becomes U+FFFD; the list then reads the name from the document (see listName). */
const nameColumn = (name: string): string => listedName(name).replaceAll('\u0000', '\uFFFD');

type Row = DocumentRow;

interface DocumentSpec<T, W> {
  table: 'agents' | 'workflows';
  maxSlugLength: number;
  /** Columns besides the common ones, kept in step with the document (for lists and lookups). */
  columns: Record<string, (doc: T) => string | number>;
  /** Further rows written in the document's transaction; `extra` is what the caller passed with the write. */
  afterWrite: (sql: Sql, id: string, doc: T, extra: W | undefined, workspaceId: string) => Promise<void>;
}

type Doc = { slug?: string; updated_at?: string };

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
  const row = await sql.row<Row>(`SELECT id, workspace_id, slug, version, stamp_us, document FROM ${table} WHERE workspace_id = $1 AND id = $2`, [workspaceId, id]);
  return row ? versionOfRow<T>(row) : null;
}

function documentTable<T extends Doc, W>(db: PgDatabase, spec: DocumentSpec<T, W>) {
  const { table } = spec;
  const extra = Object.keys(spec.columns);
  // The unique constraint PostgreSQL names for UNIQUE (workspace_id, slug) (migrations/001_init.sql).
  const slugConstraint = `${table}_workspace_id_slug_key`;

  const columnValues = (doc: T) => extra.map((c) => spec.columns[c]!(doc));

  const createTx = async (sql: Sql, workspaceId: string, id: string, doc: T, opts: CreateOptions, more: W | undefined): Promise<CreateOutcome<T>> => {
    // Creates in one workspace take turns from here to their commit: the count and the free slug
    // they read stay true until they insert (a lock's waiter reads, under READ COMMITTED, what its holder committed).
    const clock = await sql.row<{ now_us: number }>(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0)), ${NOW_US} AS now_us`, [`${table}:${workspaceId}`]);
    const slugs = await sql.rows<{ slug: string }>(`SELECT slug FROM ${table} WHERE workspace_id = $1`, [workspaceId]);
    const taken = new Set(slugs.map((r) => r.slug));
    const slug = chooseSlug(taken.size, doc.slug as string, opts, spec.maxSlugLength, (s) => taken.has(s));
    if (slug === 'limit_reached' || slug === 'slug_taken') return { ok: false, reason: slug };
    const version = newVersion(workspaceId, id, doc, slug, clock!.now_us, opts);
    if (!(version instanceof StoredVersion)) return version;
    const params = [id, workspaceId, slug, version.stampMicros, version.json, new Date().toISOString(), ...columnValues(version.document)];
    await sql.count(
      `INSERT INTO ${table} (id, workspace_id, slug, version, stamp_us, document, created_at${extra.map((c) => `, ${c}`).join('')})
       VALUES ($1, $2, $3, 1, $4, $5, $6${extra.map((_, i) => `, $${i + 7}`).join('')})`,
      params,
    );
    await spec.afterWrite(sql, id, version.document, more, workspaceId);
    await bumpListVersion(sql, table, workspaceId, id);
    return { ok: true, record: version };
  };

  const replaceTx = async (sql: Sql, workspaceId: string, id: string, expected: number, doc: T, more: W | undefined): Promise<ReplaceOutcome<T>> => {
    const row = await sql.row<{ slug: string; version: number; stamp_us: number; now_us: number }>(
      `SELECT slug, version, stamp_us, ${NOW_US} AS now_us FROM ${table} WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, id],
    );
    if (!row || row.stamp_us !== expected) return { ok: false, current: await storedById<T>(sql, table, workspaceId, id) };
    // Past the stored stamp even when this server's clock is behind the one that wrote it.
    const stampMicros = Math.max(row.now_us, row.stamp_us + 1);
    const { doc: final, json } = stamped(doc, stampMicros, row.slug);
    const updated = await sql.count(
      `UPDATE ${table} SET version = version + 1, stamp_us = $3, document = $4${extra.map((c, i) => `, ${c} = $${i + 5}`).join('')}
       WHERE id = $1 AND stamp_us = $2`,
      [id, expected, stampMicros, json, ...columnValues(final)],
    );
    // Another writer's UPDATE committed between the read and this one (which waited for it, then found the stamp moved).
    if (updated !== 1) return { ok: false, current: await storedById<T>(sql, table, workspaceId, id) };
    await spec.afterWrite(sql, id, final, more, workspaceId);
    await bumpListVersion(sql, table, workspaceId, id);
    return { ok: true, record: new StoredVersion(id, workspaceId, row.slug, row.version + 1, stampMicros, json, final) };
  };

  const lists = new VersionedLists(db, HELD_LISTS_BYTES);
  return {
    list: lists,
    // The versions read lately: each answered only once the database confirmed its stamp (see heldFind).
    find: heldFind<T>(db, table, new RowCache<StoredVersion<T>>(HELD_VERSIONS_BYTES)),
    /** Inserts a new document (version 1). With deriveSlug, `doc.slug` is a base to make unique. */
    create: async (workspaceId: string, id: string, doc: T, opts: CreateOptions, more?: W): Promise<CreateOutcome<T>> => {
      try {
        return await db.transaction((sql) => createTx(sql, workspaceId, id, doc, opts, more));
      } catch (err) {
        // The backstop: a slug inserted by a writer that did not take the lock. Another unique
        // violation (an id already used) is a fault.
        if (isUniqueViolation(err) && (err as { constraint?: string }).constraint === slugConstraint) return { ok: false, reason: 'slug_taken' };
        throw err;
      }
    },
    /** Writes `doc` if the stored stamp is still `expected`; otherwise returns what is stored. */
    replace: (workspaceId: string, id: string, expected: number, doc: T, more?: W): Promise<ReplaceOutcome<T>> =>
      db.transaction((sql) => replaceTx(sql, workspaceId, id, expected, doc, more)),
    /** Deletes the document and `dependents` (its other rows) in one transaction; whether there was one. */
    remove: (workspaceId: string, id: string, dependents: (sql: Sql) => Promise<void>): Promise<boolean> =>
      db.transaction(async (sql) => {
        const removed = (await sql.count(`DELETE FROM ${table} WHERE workspace_id = $1 AND id = $2`, [workspaceId, id])) > 0;
        if (!removed) return false;
        await dependents(sql);
        await bumpListVersion(sql, table, workspaceId, id);
        return true;
      }),
  };
}

/** An agent's trigger rows follow its document (see shared/triggers.ts). */
async function writeTriggers(sql: Sql, agentId: string, doc: Agent, secrets: SecretRow[]): Promise<void> {
  const now = new Date().toISOString();
  const plan = triggerPlan(doc);
  const keep = plan.keep.map((t) => t.id);
  // One statement: the dropped triggers deleted (their secrets' hashes retired, so an old URL is
  // told apart from an unknown one), the kept ones inserted where new, the unsigned ones' keys cleared.
  await sql.count(
    `WITH dropped AS (DELETE FROM agent_triggers WHERE agent_id = $1 AND id <> ALL($2::text[]) RETURNING id, secret_hash),
       retired AS (
         INSERT INTO retired_webhook_secrets (secret_hash, trigger_id, reason, retired_at)
         SELECT secret_hash, id, 'dropped', $4 FROM dropped WHERE secret_hash IS NOT NULL AND secret_hash <> ''
         ON CONFLICT DO NOTHING),
       unsigned AS (UPDATE agent_triggers SET signing_secret = NULL WHERE id = ANY($5::text[]) AND signing_secret IS NOT NULL)
     INSERT INTO agent_triggers (id, agent_id, kind) SELECT t.id, $1, t.kind FROM unnest($2::text[], $3::text[]) AS t (id, kind)
     ON CONFLICT (id) DO NOTHING`,
    [agentId, keep, plan.keep.map((t) => t.kind), now, plan.unsigned],
  );
  for (const s of secrets) {
    await sql.count(
      `INSERT INTO retired_webhook_secrets (secret_hash, trigger_id, reason, retired_at)
       SELECT secret_hash, id, 'rotated', $2 FROM agent_triggers WHERE id = $1 AND secret_hash IS NOT NULL AND secret_hash <> $3
       ON CONFLICT DO NOTHING`,
      [s.triggerId, now, s.hash],
    );
    await sql.count('UPDATE agent_triggers SET secret_hash = $1, secret_prefix = $2, signing_secret = $3 WHERE id = $4 AND agent_id = $5', [
      s.hash,
      s.prefix,
      s.signingSecret,
      s.triggerId,
      agentId,
    ]);
  }
}

export function pgAgentRepository(db: PgDatabase): AgentRepository {
  const table = documentTable<Agent, SecretRow[]>(db, {
    table: 'agents',
    maxSlugLength: 160,
    columns: { name: (doc) => nameColumn(doc.name), status: (doc) => doc.status },
    afterWrite: async (sql, agentId, doc, secrets = [], workspaceId) => {
      await syncSchedules(sql, workspaceId, agentId, agentSchedules(doc), Date.now());
      await writeTriggers(sql, agentId, doc, secrets);
    },
  });
  return {
    list: (workspaceId) => agentList(db, table.list, workspaceId),
    find: (workspaceId, ref) => table.find(workspaceId, ref),
    create: (workspaceId, id, doc, opts, secrets) => table.create(workspaceId, id, doc, opts, secrets),
    replace: (workspaceId, id, expected, doc, secrets) => table.replace(workspaceId, id, expected, doc, secrets),
  };
}

export function pgWorkflowRepository(db: PgDatabase): WorkflowRepository {
  const table = documentTable<Workflow, undefined>(db, {
    table: 'workflows',
    maxSlugLength: 80,
    columns: { name: (doc) => nameColumn(doc.name), enabled: (doc) => (doc.enabled ? 1 : 0) },
    // The workflow's schedule row follows it, like an agent's (see syncSchedules).
    afterWrite: (sql, id, doc, _extra, workspaceId) => syncSchedules(sql, workspaceId, id, workflowSchedules(id, doc), Date.now()),
  });
  return {
    list: (workspaceId) => workflowList(db, table.list, workspaceId),
    find: (workspaceId, ref) => table.find(workspaceId, ref),
    create: (workspaceId, id, doc, opts) => table.create(workspaceId, id, doc, { ...opts, deriveSlug: false }),
    replace: (workspaceId, id, expected, doc) => table.replace(workspaceId, id, expected, doc),
    remove: (workspaceId, id) => table.remove(workspaceId, id, (sql) => removeSchedules(sql, id)),
  };
}

export function pgConnectionRepository(db: PgDatabase): ConnectionRepository {
  return {
    list: (workspaceId) => db.rows<Connection>('SELECT ref, app, label, status FROM connections WHERE workspace_id = $1 ORDER BY ref', [workspaceId]),
    upsert: async (workspaceId, c) => {
      await db.count(
        `INSERT INTO connections (workspace_id, ref, app, label, status, created_at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (workspace_id, ref) DO UPDATE SET app = excluded.app, label = excluded.label, status = excluded.status`,
        [workspaceId, c.ref, c.app, c.label, c.status, new Date().toISOString()],
      );
    },
  };
}

export function pgWorkspaceRepository(db: PgDatabase): WorkspaceRepository {
  return {
    credits: async (workspaceId, initial) => {
      // Two statements, not one: a row another replica inserted after this statement's snapshot is
      // skipped by DO NOTHING and would be invisible to a SELECT in the same statement.
      await db.count('INSERT INTO workspaces (id, credits, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [workspaceId, initial, new Date().toISOString()]);
      return (await db.row<{ credits: number }>('SELECT credits FROM workspaces WHERE id = $1', [workspaceId]))!.credits;
    },
    setCredits: async (workspaceId, amount) => {
      await db.count(
        `INSERT INTO workspaces (id, credits, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET credits = excluded.credits`,
        [workspaceId, amount, new Date().toISOString()],
      );
    },
  };
}
