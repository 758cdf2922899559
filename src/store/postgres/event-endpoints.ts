// Event endpoints and the outbox of their deliveries on PostgreSQL, for any number of replicas. The
// deliveries (each with its event's body) are written by the migration's triggers with each change; here they are
// read, claimed for an attempt (FOR UPDATE SKIP LOCKED: replicas claim disjoint rows, each
// endpoint's due ones in turn), recorded by the claim that made the attempt (a conditional write),
// redelivered and pruned.
import type { StampClock } from '../../domain/stamps';
import { uuidV7 } from '../../ids';
import { DELIVERY_LOG_ATTEMPTS, type EventEndpointRecord, type EventEndpointRepository, type SealedEndpointSecrets } from '../port';
import {
  CLAIM_COLUMNS,
  CLAIM_VISITS,
  claimOfRow,
  DELIVERY_COLUMNS,
  deliveryOfRow,
  ENDPOINT_COLUMNS,
  endpointOfRow,
  eventIdAt,
  subscriptionTypes,
  testEventBody,
  type ClaimRow,
  type DeliveryRow,
  type EndpointRow,
} from '../shared/event-endpoints';
import type { PgDatabase, Sql } from './database';
import { holdsNul } from './documents';

const read = async (sql: Sql, ws: string, id: string): Promise<EventEndpointRecord | null> => {
  if (holdsNul(id)) return null;
  const row = await sql.row<EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM event_endpoints WHERE workspace_id = $1 AND id = $2`, [ws, id]);
  return row ? endpointOfRow(row) : null;
};

/** The subscription rows of the endpoint as it now is; a disabled one's waiting deliveries fail (redeliverable once enabled). */
async function resubscribe(sql: Sql, ws: string, record: EventEndpointRecord): Promise<void> {
  await sql.count('DELETE FROM event_subscriptions WHERE endpoint_id = $1', [record.id]);
  const types = subscriptionTypes(record.status, record.eventTypes);
  if (types.length) {
    await sql.count('INSERT INTO event_subscriptions (workspace_id, event_type, endpoint_id) SELECT $1, unnest($2::text[]), $3', [ws, types, record.id]);
  }
  if (record.status === 'disabled') await failPending(sql, record.id, Date.now());
}

const failPending = (sql: Sql, endpoint: string, now: number) =>
  sql.count("UPDATE event_deliveries SET status = 'failed', next_attempt_ms = NULL, finished_ms = $2 WHERE endpoint_id = $1 AND status = 'pending'", [
    endpoint,
    now,
  ]);

export function pgEventEndpointRepository(db: PgDatabase, clock: StampClock): EventEndpointRepository {
  return {
    list: async (ws) =>
      (await db.rows<EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM event_endpoints WHERE workspace_id = $1 ORDER BY id`, [ws])).map(endpointOfRow),
    get: (ws, id) => read(db, ws, id),
    create: (ws, w, limit) =>
      db.transaction(async (sql) => {
        await sql.row('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`event_endpoints:${ws}`]);
        const { n } = (await sql.row<{ n: number }>('SELECT COUNT(*)::int AS n FROM event_endpoints WHERE workspace_id = $1', [ws]))!;
        if (n >= limit) return { ok: false as const, reason: 'limit_reached' as const };
        await sql.count(
          `INSERT INTO event_endpoints (id, workspace_id, url, event_types, description, status, all_spaces, teams, secret_sealed, secret_prefix, created_at, stamp_us)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
          [
            w.id,
            ws,
            w.url,
            JSON.stringify(w.eventTypes),
            w.description,
            w.status,
            w.allSpaces ? 1 : 0,
            JSON.stringify(w.teams),
            w.sealedSecret,
            w.secretPrefix,
            new Date().toISOString(),
            clock.next(),
          ],
        );
        const record = (await read(sql, ws, w.id)) as EventEndpointRecord;
        await resubscribe(sql, ws, record);
        return { ok: true as const, record };
      }),
    replace: (ws, id, expected, c) =>
      db.transaction(async (sql) => {
        const changed = await sql.count(
          `UPDATE event_endpoints SET url = $4, event_types = $5, description = $6, all_spaces = $7, teams = $8, stamp_us = $9,
             disabled_reason = CASE WHEN $10 = 'enabled' THEN NULL WHEN status = 'disabled' THEN disabled_reason END,
             failing_since_ms = CASE WHEN $10 = 'enabled' AND status = 'enabled' THEN failing_since_ms END,
             status = $10
           WHERE workspace_id = $1 AND id = $2 AND stamp_us = $3`,
          [ws, id, expected, c.url, JSON.stringify(c.eventTypes), c.description, c.allSpaces ? 1 : 0, JSON.stringify(c.teams), clock.next(expected), c.status],
        );
        if (changed !== 1) return { ok: false as const, current: await read(sql, ws, id) };
        const record = (await read(sql, ws, id)) as EventEndpointRecord;
        await resubscribe(sql, ws, record);
        return { ok: true as const, record };
      }),
    rotate: async (ws, id, secret, until) => {
      if (holdsNul(id)) return null;
      const row = await db.row<EndpointRow>(
        `UPDATE event_endpoints SET previous_sealed = CASE WHEN $5::bigint IS NULL THEN NULL ELSE secret_sealed END, previous_until_ms = $5::bigint,
           secret_sealed = $3, secret_prefix = $4, stamp_us = GREATEST(stamp_us + 1, $6)
         WHERE workspace_id = $1 AND id = $2 RETURNING ${ENDPOINT_COLUMNS}`,
        [ws, id, secret.sealed, secret.prefix, until, clock.next()],
      );
      return row ? endpointOfRow(row) : null;
    },
    remove: async (ws, id, expected) => {
      if ((await db.count('DELETE FROM event_endpoints WHERE workspace_id = $1 AND id = $2 AND stamp_us = $3', [ws, id, expected])) === 1) return 'removed';
      return (await read(db, ws, id)) ? 'stale' : 'missing';
    },
    ...outboxMethods(db, clock),
    ...secretMethods(db),
  };
}

const SEALED_COLUMN = { secret: 'secret_sealed', previous: 'previous_sealed' } as const;

/** A SECRETS_KEY rotation's reseal of the endpoints' secrets (services/event-endpoints.ts). */
function secretMethods(db: PgDatabase): Pick<EventEndpointRepository, 'sealedSecrets' | 'replaceSealed'> {
  return {
    sealedSecrets: (after, limit) =>
      db.rows<SealedEndpointSecrets>(
        `SELECT id, workspace_id AS "workspaceId", secret_sealed AS secret, previous_sealed AS previous FROM event_endpoints WHERE id > $1 ORDER BY id LIMIT $2`,
        [after, limit],
      ),
    replaceSealed: async (id, which, from, to) =>
      (await db.count(`UPDATE event_endpoints SET ${SEALED_COLUMN[which]} = $3 WHERE id = $1 AND ${SEALED_COLUMN[which]} = $2`, [id, from, to])) === 1,
  };
}

// This function is long because it is one member per method of the outbox's part of the port.
function outboxMethods(
  db: PgDatabase,
  clock: StampClock,
): Omit<EventEndpointRepository, 'list' | 'get' | 'create' | 'replace' | 'rotate' | 'remove' | 'sealedSecrets' | 'replaceSealed'> {
  const visitedEndpoints = endpointWalk(db);
  return {
    queueTest: (ws, id, now) =>
      db.transaction(async (sql) => {
        if (holdsNul(id)) return null;
        if (!(await sql.row("SELECT 1 FROM event_endpoints WHERE workspace_id = $1 AND id = $2 AND status = 'enabled' FOR SHARE", [ws, id]))) return null;
        const { seq } = (await sql.row<{ seq: number }>(
          'INSERT INTO event_sequences AS s (subject, seq) VALUES ($1, 1) ON CONFLICT (subject) DO UPDATE SET seq = s.seq + 1 RETURNING s.seq',
          [`endpoint:${id}`],
        ))!;
        const deliveryId = uuidV7(now);
        await sql.count(
          `INSERT INTO event_deliveries (id, endpoint_id, workspace_id, event_id, event_type, body, status, next_attempt_ms, created_ms)
           VALUES ($1, $2, $3, $4, 'webhook.test', $5, 'pending', $6, $6)`,
          [deliveryId, id, ws, eventIdAt(now), testEventBody(id, seq, now), now],
        );
        return deliveryId;
      }),
    deliveries: async (ws, endpoint, q) => {
      if (holdsNul(endpoint)) return [];
      const rows = await db.rows<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM event_deliveries AS d
         WHERE d.workspace_id = $1 AND d.endpoint_id = $2 AND ($3::text IS NULL OR d.id < $3) AND ($4::text IS NULL OR d.status = $4)
         ORDER BY d.id DESC LIMIT $5`,
        [ws, endpoint, q.before, q.status, q.limit],
      );
      return rows.map(deliveryOfRow);
    },
    delivery: async (ws, endpoint, id) => {
      if (holdsNul(endpoint) || holdsNul(id)) return null;
      const row = await db.row<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM event_deliveries AS d WHERE d.workspace_id = $1 AND d.endpoint_id = $2 AND d.id = $3`,
        [ws, endpoint, id],
      );
      return row ? deliveryOfRow(row) : null;
    },
    redeliver: async (ws, endpoint, id, now) => {
      if (holdsNul(endpoint) || holdsNul(id)) return 'missing';
      const queued = await db.count(
        `UPDATE event_deliveries SET status = 'pending', manual = 1, next_attempt_ms = $4, finished_ms = NULL
         WHERE workspace_id = $1 AND endpoint_id = $2 AND id = $3 AND status IN ('succeeded', 'failed')
           AND EXISTS (SELECT 1 FROM event_endpoints WHERE id = $2 AND status = 'enabled')`,
        [ws, endpoint, id, now],
      );
      if (queued === 1) return 'queued';
      const state = await db.row<{ endpoint_status: string }>(
        `SELECT p.status AS endpoint_status FROM event_deliveries AS d JOIN event_endpoints AS p ON p.id = d.endpoint_id
         WHERE d.workspace_id = $1 AND d.endpoint_id = $2 AND d.id = $3`,
        [ws, endpoint, id],
      );
      if (!state) return 'missing';
      return state.endpoint_status !== 'enabled' ? 'disabled' : 'unfinished';
    },
    // The endpoints with deliveries waiting, visited from where this process's last claim stopped
    // (visitedEndpoints); each enabled one gives up to its room (`perEndpoint` less the attempts it
    // has under way) of its oldest due ones, locked past what other replicas hold; then they take
    // turns. Every step is an index seek or a range bounded by the room, whatever the backlog.
    claimDue: async (now, until, limit, perEndpoint) => {
      const visited = await visitedEndpoints();
      if (!visited.length) return [];
      const rows = await db.rows<ClaimRow>(
        `WITH picked AS (
           SELECT x.id, x.next_attempt_ms AS due_ms, row_number() OVER (PARTITION BY x.endpoint_id ORDER BY x.next_attempt_ms) AS turn
           FROM unnest($5::text[]) AS v(endpoint_id) JOIN event_endpoints AS p ON p.id = v.endpoint_id AND p.status = 'enabled'
           CROSS JOIN LATERAL (
             SELECT d.id, d.endpoint_id, d.next_attempt_ms FROM event_deliveries AS d
             WHERE d.endpoint_id = v.endpoint_id AND d.status IN ('pending', 'delivering') AND d.next_attempt_ms <= $1
             ORDER BY d.next_attempt_ms
             LIMIT GREATEST(0, $3 - (SELECT COUNT(*) FROM event_deliveries AS f WHERE f.endpoint_id = v.endpoint_id AND f.status = 'delivering' AND f.next_attempt_ms > $1))
             FOR UPDATE OF d SKIP LOCKED
           ) AS x
         ), chosen AS (
           SELECT id FROM picked ORDER BY turn, due_ms LIMIT $4
         ), claimed AS (
           UPDATE event_deliveries AS d SET status = 'delivering', attempts = d.attempts + 1, next_attempt_ms = $2
           FROM chosen WHERE d.id = chosen.id RETURNING d.*
         )
         SELECT ${CLAIM_COLUMNS} FROM claimed AS d JOIN event_endpoints AS p ON p.id = d.endpoint_id`,
        [now, until, perEndpoint, limit, visited],
      );
      return rows.map(claimOfRow);
    },
    finishAttempt: ({ id, attempt: attempts }, outcome, now, disableAfterMs) =>
      db.transaction(async (sql) => {
        const finished = await sql.row<{ endpoint_id: string }>(
          `UPDATE event_deliveries SET status = $3, next_attempt_ms = $4, finished_ms = $5,
             log = (CASE WHEN jsonb_array_length(log::jsonb) >= ${DELIVERY_LOG_ATTEMPTS} THEN log::jsonb - 0 ELSE log::jsonb END || jsonb_build_array($6::jsonb))::text
           WHERE id = $1 AND status = 'delivering' AND attempts = $2 RETURNING endpoint_id`,
          [
            id,
            attempts,
            outcome.kind === 'retry' ? 'pending' : outcome.kind,
            outcome.kind === 'retry' ? outcome.retryAtMs : null,
            outcome.kind === 'retry' ? null : now,
            JSON.stringify(outcome.attempt),
          ],
        );
        if (!finished) return false;
        const endpoint = finished.endpoint_id;
        if (outcome.kind === 'succeeded') {
          await sql.count('UPDATE event_endpoints SET failing_since_ms = NULL WHERE id = $1 AND failing_since_ms IS NOT NULL', [endpoint]);
          return true;
        }
        const forced = outcome.kind === 'failed' && outcome.disableReason !== null;
        const health = await sql.row<{ since: string }>(
          'UPDATE event_endpoints SET failing_since_ms = COALESCE(failing_since_ms, $2) WHERE id = $1 RETURNING failing_since_ms AS since',
          [endpoint, now],
        );
        const since = Number(health?.since ?? now);
        const reason = forced
          ? (outcome as { disableReason: string }).disableReason
          : `every delivery failed since ${new Date(since).toISOString()}; enable it again with a replace once it answers`;
        const disabled = await sql.count(
          `UPDATE event_endpoints SET status = 'disabled', disabled_reason = $2, stamp_us = GREATEST(stamp_us + 1, $3)
           WHERE id = $1 AND status = 'enabled' AND ($4 OR failing_since_ms <= $5)`,
          [endpoint, reason, clock.next(), forced, now - disableAfterMs],
        );
        if (disabled === 1) {
          await sql.count('DELETE FROM event_subscriptions WHERE endpoint_id = $1', [endpoint]);
          await failPending(sql, endpoint, now);
        }
        return true;
      }),
    prune: (before, limit) =>
      db.count('DELETE FROM event_deliveries WHERE id IN (SELECT id FROM event_deliveries WHERE finished_ms < $1 ORDER BY finished_ms LIMIT $2)', [
        before,
        limit,
      ]),
  };
}

/** Up to `limit` endpoints with deliveries waiting, in id order after `after` (a loose index scan: one seek each). */
const WALK = `WITH RECURSIVE walk AS (
    (SELECT endpoint_id FROM event_deliveries WHERE status IN ('pending', 'delivering') AND endpoint_id > $1 ORDER BY endpoint_id LIMIT 1)
    UNION ALL
    SELECT (SELECT d.endpoint_id FROM event_deliveries AS d WHERE d.status IN ('pending', 'delivering') AND d.endpoint_id > w.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
    FROM walk AS w WHERE w.endpoint_id IS NOT NULL
  )
  SELECT endpoint_id FROM walk WHERE endpoint_id IS NOT NULL LIMIT $2`;

/**
 * The endpoints a claim visits: up to CLAIM_VISITS with deliveries waiting, from where this
 * process's last claim stopped, around to the first again (round robin; on SQLite, event-claims.ts).
 */
function endpointWalk(db: PgDatabase): () => Promise<string[]> {
  let cursor = '';
  const walk = async (after: string, limit: number) => (await db.rows<{ endpoint_id: string }>(WALK, [after, limit])).map((r) => r.endpoint_id);
  return async () => {
    const start = cursor;
    const visited = await walk(start, CLAIM_VISITS);
    if (visited.length < CLAIM_VISITS && start !== '') {
      for (const id of await walk('', CLAIM_VISITS - visited.length)) if (id <= start) visited.push(id);
    }
    cursor = visited.length === CLAIM_VISITS ? visited[visited.length - 1]! : '';
    return visited;
  };
}
