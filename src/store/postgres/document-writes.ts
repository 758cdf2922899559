// A document's write on PostgreSQL as one statement: the write of its row (a CTE named `written`,
// an INSERT, a conditional UPDATE or a DELETE returning the row) and the rows that follow it (the
// owner's schedules, an agent's trigger rows and channel bindings, the list's version) in CTEs that act only when
// `written` returned the row. One round trip, and no BEGIN or COMMIT for a replace or a delete: the
// statement commits on its own, all of it or nothing.
//
// What the followers decide is what the SQLite adapter decides in TypeScript (shared/schedules.ts,
// shared/triggers.ts), written here as SQL over the statement's own reading of the rows: `written`
// holds the document's row, so no other document write of this owner runs beside it; a scheduler
// advancing one of its schedule rows meanwhile is waited for by the UPDATE, which then sets its
// values from the row as that advance left it. A removed schedule's fire records go with it by the
// foreign key's cascade (migrations/005), which reads the rows as they are then, not as the
// statement's snapshot saw them.
import type { DeclaredSchedule } from '../../domain/triggers';
import { nextDueAfter } from '../../domain/schedule';
import type { Agent } from '../../domain/types';
import type { SecretRow } from '../port';
import { channelBindings } from '../shared/channel-messages';
import { triggerPlan } from '../shared/triggers';
import { numbered, type NumberedStatement } from '../shared/statements';
import { versionTable } from '../shared/versions';
import { shardOf, type ListedTable } from './list-versions';

/** Rows that follow a document: CTEs of its write (after `written`), and their parameters' values for one write. */
export interface Follower<T, W> {
  ctes: string;
  /** `doc` null: the document is gone (a delete), and nothing follows it any more. */
  values(id: string, doc: T | null, extra: W | undefined, nowMs: number, workspaceId: string): Record<string, unknown>;
  /**
   * Whether a replace of `before` (the stored version, whose write left these rows as it declared
   * them) by `after` leaves the rows as they are: its CTEs are then left out of the statement.
   */
  unchanged(id: string, before: T, after: T, extra: W | undefined): boolean;
}

const WRITTEN = 'EXISTS (SELECT 1 FROM written)';

/**
 * The owner's schedule rows become what its document declares (as schedulePlan, shared/schedules.ts):
 * gone ones deleted, new ones inserted, changed ones (expression, zone, or whether they fire) due
 * again from @s_next (the next due time after now, computed by the caller); an unchanged one keeps
 * its due time, and a row that already holds every value is not written. A changed detector forgets
 * the old one's output and failures.
 */
const KEPT_DUE = `CASE WHEN s.active = 1 AND d.active = 1 AND s.cron = d.cron AND s.timezone = d.timezone AND s.next_due_at IS NOT NULL
    THEN s.next_due_at ELSE d.next_due_at END`;
const SAME_SOURCE = 's.detector IS NOT DISTINCT FROM d.detector AND s.cron = d.cron AND s.timezone = d.timezone';
const SCHEDULE_CTES = `
  declared AS (
    SELECT * FROM unnest(@s_id::text[], @s_kind::text[], @s_trigger::text[], @s_cron::text[], @s_zone::text[], @s_active::smallint[], @s_next::bigint[], @s_detector::text[])
      AS d (id, kind, trigger_id, cron, timezone, active, next_due_at, detector)),
  schedules_gone AS (
    DELETE FROM schedules WHERE owner_id = @id AND id <> ALL (@s_id::text[]) AND ${WRITTEN}),
  schedules_changed AS (
    UPDATE schedules AS s SET cron = d.cron, timezone = d.timezone, active = d.active, next_due_at = ${KEPT_DUE},
      last_output_hash = CASE WHEN s.detector IS NOT DISTINCT FROM d.detector THEN s.last_output_hash END,
      failures = CASE WHEN ${SAME_SOURCE} THEN s.failures ELSE 0 END,
      last_error = CASE WHEN ${SAME_SOURCE} THEN s.last_error END,
      detector = d.detector
    FROM declared AS d
    WHERE s.id = d.id AND s.owner_id = @id AND ${WRITTEN}
      AND NOT (${SAME_SOURCE} AND s.active = d.active AND s.next_due_at IS NOT DISTINCT FROM ${KEPT_DUE})),
  schedules_added AS (
    INSERT INTO schedules (id, kind, workspace_id, owner_id, trigger_id, cron, timezone, active, next_due_at, detector)
    SELECT d.id, d.kind, @workspace::text, @id::text, d.trigger_id, d.cron, d.timezone, d.active, d.next_due_at, d.detector FROM declared AS d
    WHERE ${WRITTEN} AND NOT EXISTS (SELECT 1 FROM schedules AS s WHERE s.id = d.id))`;

function scheduleValues(declared: readonly DeclaredSchedule[], nowMs: number): Record<string, unknown> {
  return {
    s_id: declared.map((d) => d.id),
    s_kind: declared.map((d) => d.kind),
    s_trigger: declared.map((d) => d.triggerId),
    s_cron: declared.map((d) => d.cron),
    s_zone: declared.map((d) => d.timezone),
    s_active: declared.map((d) => (d.active ? 1 : 0)),
    s_next: declared.map((d) => (d.active ? nextDueAfter(d.cron, d.timezone, nowMs) : null)),
    s_detector: declared.map((d) => d.detector),
  };
}

/**
 * An agent's trigger rows follow its document (as shared/triggers.ts plans them): dropped ones
 * deleted, their secrets' hashes retired (so an old URL is told apart from an unknown one); kept
 * ones inserted where new; a trigger given a new secret (@secret_*) takes it, its old hash retired;
 * an unsigned one's signing key cleared; an app_event trigger's row names its workspace, app and
 * connection (triggers_listening: the AppEventRepository's index). A kept id that names another agent's trigger is left alone.
 * The rows that change are updated by a WHERE that finds only them (an upsert would lock every kept
 * row, a write each). A new trigger's row is its insert's: the update's snapshot does not hold it.
 */
const TRIGGER_CTES = `
  secrets AS (
    SELECT * FROM unnest(@secret_id::text[], @secret_hash::text[], @secret_prefix::text[], @secret_signing::text[]) AS s (trigger_id, hash, prefix, signing_secret)),
  triggers_dropped AS (
    DELETE FROM agent_triggers WHERE agent_id = @id AND id <> ALL (@keep::text[]) AND ${WRITTEN} RETURNING id, secret_hash),
  secrets_retired AS (
    INSERT INTO retired_webhook_secrets (secret_hash, trigger_id, reason, retired_at)
    SELECT secret_hash, id, 'dropped', @now::text FROM triggers_dropped WHERE secret_hash IS NOT NULL AND secret_hash <> ''
    UNION ALL
    SELECT t.secret_hash, t.id, 'rotated', @now::text FROM agent_triggers AS t JOIN secrets AS s ON s.trigger_id = t.id
    WHERE t.agent_id = @id AND t.secret_hash IS NOT NULL AND t.secret_hash <> s.hash AND ${WRITTEN}
    ON CONFLICT DO NOTHING),
  triggers_added AS (
    INSERT INTO agent_triggers (id, agent_id, kind, secret_hash, secret_prefix, signing_secret, workspace_id, event_app, event_connection)
    SELECT k.id, @id::text, k.kind, s.hash, s.prefix, s.signing_secret, CASE WHEN k.app IS NOT NULL THEN @workspace::text END, k.app, k.conn
    FROM unnest(@keep::text[], @kinds::text[], @event_app::text[], @event_connection::text[]) AS k (id, kind, app, conn)
    LEFT JOIN secrets AS s ON s.trigger_id = k.id
    WHERE ${WRITTEN}
    ON CONFLICT (id) DO NOTHING),
  triggers_listening AS (
    UPDATE agent_triggers AS t SET workspace_id = @workspace::text, event_app = k.app, event_connection = k.conn
    FROM unnest(@keep::text[], @event_app::text[], @event_connection::text[]) AS k (id, app, conn)
    WHERE t.id = k.id AND t.agent_id = @id AND k.app IS NOT NULL AND ${WRITTEN}
      AND (t.workspace_id, t.event_app, t.event_connection) IS DISTINCT FROM (@workspace::text, k.app, k.conn)),
  triggers_resecured AS (
    UPDATE agent_triggers AS t SET secret_hash = COALESCE(s.hash, t.secret_hash), secret_prefix = COALESCE(s.prefix, t.secret_prefix), signing_secret = s.signing_secret
    FROM unnest(@keep::text[]) AS k (id) LEFT JOIN secrets AS s ON s.trigger_id = k.id
    WHERE t.id = k.id AND t.agent_id = @id AND ${WRITTEN}
      AND (s.trigger_id IS NOT NULL OR (t.id = ANY (@unsigned::text[]) AND t.signing_secret IS NOT NULL)))`;

function triggerValues(doc: Agent | null, secrets: readonly SecretRow[], now: string): Record<string, unknown> {
  const plan = doc ? triggerPlan(doc) : { keep: [], unsigned: [], events: [] };
  const listening = new Map(plan.events.map((e) => [e.id, e]));
  return {
    keep: plan.keep.map((t) => t.id),
    kinds: plan.keep.map((t) => t.kind),
    event_app: plan.keep.map((t) => listening.get(t.id)?.app ?? null),
    event_connection: plan.keep.map((t) => listening.get(t.id)?.connection ?? null),
    unsigned: plan.unsigned,
    now,
    secret_id: secrets.map((s) => s.triggerId),
    secret_hash: secrets.map((s) => s.hash),
    secret_prefix: secrets.map((s) => s.prefix),
    secret_signing: secrets.map((s) => s.signingSecret),
  };
}

/** The owner's schedules (SCHEDULE_CTES), as `declared` says its document declares them. */
export function scheduleFollower<T, W>(declared: (id: string, doc: T) => DeclaredSchedule[]): Follower<T, W> {
  return {
    ctes: SCHEDULE_CTES,
    values: (id, doc, _extra, nowMs) => scheduleValues(doc ? declared(id, doc) : [], nowMs),
    // The same declarations leave every row as it is: a row's due time, failures and detector
    // output move with its expression, zone, activity or detector only (see SCHEDULE_CTES).
    unchanged: (id, before, after) => JSON.stringify(declared(id, before)) === JSON.stringify(declared(id, after)),
  };
}

/** An agent's trigger rows (TRIGGER_CTES): unchanged when it keeps the same triggers, of the same kinds and signing, and mints no secret. */
export const triggerFollower: Follower<Agent, SecretRow[]> = {
  ctes: TRIGGER_CTES,
  values: (_id, doc, secrets = [], nowMs) => triggerValues(doc, secrets, new Date(nowMs).toISOString()),
  unchanged: (_id, before, after, secrets = []) => secrets.length === 0 && JSON.stringify(triggerPlan(before)) === JSON.stringify(triggerPlan(after)),
};

/**
 * An agent's channel bindings follow its document (shared/channel-messages.ts, channelBindings):
 * those it no longer names deleted, new ones inserted. Another agent's row for an address makes the
 * insert, and so the whole statement, fail (agent_channel_bindings_pkey, or _mailbox for a mailbox
 * of another workspace's agent: the write's outcome is
 * channel_taken, documents.ts); of two agents binding one address at once, the second waits for the
 * first's commit, then fails so.
 */
const BINDING_CTES = `
  bindings_wanted AS (
    SELECT * FROM unnest(@b_channel::text[], @b_address::text[]) AS b (channel, address)),
  bindings_released AS (
    DELETE FROM agent_channel_bindings AS h WHERE h.agent_id = @id AND ${WRITTEN}
      AND NOT EXISTS (SELECT 1 FROM bindings_wanted AS b WHERE b.channel = h.channel AND b.address = h.address)),
  bindings_bound AS (
    INSERT INTO agent_channel_bindings (workspace_id, channel, address, agent_id)
    SELECT @workspace::text, b.channel, b.address, @id::text FROM bindings_wanted AS b
    WHERE ${WRITTEN} AND NOT EXISTS (SELECT 1 FROM agent_channel_bindings AS h
      WHERE h.workspace_id = @workspace::text AND h.channel = b.channel AND h.address = b.address AND h.agent_id = @id::text))`;

/** An agent's channel bindings (BINDING_CTES): unchanged when its document binds the same addresses. */
export const bindingFollower: Follower<Agent, SecretRow[]> = {
  ctes: BINDING_CTES,
  values: (_id, doc, _extra, _nowMs, workspaceId) => {
    const wanted = doc ? channelBindings(doc, workspaceId) : [];
    return { b_channel: wanted.map((b) => b.channel), b_address: wanted.map((b) => b.address) };
  },
  // One workspace's document: the workspace changes nothing of the comparison.
  unchanged: (_id, before, after) => JSON.stringify(channelBindings(before, '')) === JSON.stringify(channelBindings(after, '')),
};

/**
 * A create's or replace's version kept (port/documents.ts): the document as written, numbered as
 * `written` numbered it, @author and @changes (JSON) beside it.
 */
const versionKept = (table: ListedTable) => `
  version_kept AS (
    INSERT INTO ${versionTable(table)} (document_id, version, stamp_us, author, changes, document)
    SELECT id, version, @stamp::bigint, @author::text, @changes::text, @document::text FROM written),`;

/**
 * One statement: `written` (which returns the document's id, and its version unless `keeps` is
 * false, when it wrote), the followers, the version it keeps, and the list's version moved on
 * (last: its shard's row is locked only while the statement ends). It returns `n`, 1 when the
 * document was written and 0 when not (nothing else was then).
 */
function documentWrite(table: ListedTable, written: string, followers: readonly { ctes: string }[], keeps = true): NumberedStatement {
  return numbered(`WITH written AS (${written}),${followers.map((f) => `${f.ctes},`).join('')}${keeps ? versionKept(table) : ''}
  list_bumped AS (
    INSERT INTO list_versions (workspace_id, tbl, shard, version) SELECT @workspace::text, '${table}', @shard::int, 1 FROM written
    ON CONFLICT (workspace_id, tbl, shard) DO UPDATE SET version = list_versions.version + 1)
  SELECT COUNT(*)::int AS n FROM written`);
}

/**
 * A table's writes: its insert, its replace (if the stamp is still @expected) with the followers a
 * replace can change, and its delete. The document's own columns besides the common ones
 * (`columns`) are named @col_<column>. A replace's statement per set of followers is made once.
 */
export function documentStatements<T, W>(table: ListedTable, columns: readonly string[], followers: readonly Follower<T, W>[]) {
  const replaces = new Map<string, NumberedStatement>();
  return {
    insert: documentWrite(
      table,
      `INSERT INTO ${table} (id, workspace_id, slug, version, stamp_us, document, created_at${columns.map((c) => `, ${c}`).join('')})
       VALUES (@id, @workspace, @slug, 1, @stamp, @document, @created${columns.map((c) => `, @col_${c}`).join('')}) RETURNING id, version`,
      followers,
    ),
    update: (changed: readonly Follower<T, W>[]): NumberedStatement => {
      const key = followers.map((f) => (changed.includes(f) ? 1 : 0)).join('');
      let statement = replaces.get(key);
      if (!statement) {
        statement = documentWrite(
          table,
          `UPDATE ${table} SET version = version + 1, stamp_us = @stamp, document = @document${columns.map((c) => `, ${c} = @col_${c}`).join('')}
           WHERE id = @id AND workspace_id = @workspace AND stamp_us = @expected RETURNING id, version`,
          changed,
        );
        replaces.set(key, statement);
      }
      return statement;
    },
    // Its versions go by the foreign key's cascade (migrations/006).
    deletion: documentWrite(table, `DELETE FROM ${table} WHERE workspace_id = @workspace AND id = @id RETURNING id`, followers, false),
  };
}

/** The parameters every document write names besides its own: the document, its workspace and its list shard. */
export const writeKeys = (workspaceId: string, id: string) => ({ id, workspace: workspaceId, shard: shardOf(id) });
