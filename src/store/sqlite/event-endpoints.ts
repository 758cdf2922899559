// Event endpoints and the outbox of their deliveries on SQLite. The deliveries (each with its
// event's body) are written by the migration's triggers with each change; here they are read,
// claimed for an attempt (one process serves the file, so a claim is a plain conditional write),
// recorded, redelivered and pruned. Each write is its own savepoint of a group commit.
import type { StampClock } from '../../domain/stamps';
import { uuidV7 } from '../../ids';
import { DELIVERY_LOG_ATTEMPTS, type EventEndpointRepository, type EventEndpointRecord, type SealedEndpointSecrets } from '../port';
import {
  CLAIM_COLUMNS,
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
import type { Db } from './database';
import { dueDeliveryPicker } from './event-claims';
import type { GroupCommit } from './group-commit';

/**
 * A disabled endpoint's waiting deliveries fail (redeliverable once it is enabled again): the claim
 * never reads past them. Both ways an endpoint is disabled run it: a replace and a failing endpoint's record.
 */
const FAIL_PENDING =
  "UPDATE event_deliveries SET status = 'failed', next_attempt_ms = NULL, finished_ms = ? WHERE endpoint_id = ? AND status IN ('pending', 'delivering') AND status = 'pending'";

// This function is long because it is one member per method of the port (the outbox's are apart: outboxMethods).
export function eventEndpointRepository(db: Db, commit: GroupCommit, clock: StampClock): EventEndpointRepository {
  const list = db.prepare(`SELECT ${ENDPOINT_COLUMNS} FROM event_endpoints WHERE workspace_id = ? ORDER BY id`);
  const get = db.prepare(`SELECT ${ENDPOINT_COLUMNS} FROM event_endpoints WHERE workspace_id = ? AND id = ?`);
  const count = db.prepare('SELECT COUNT(*) FROM event_endpoints WHERE workspace_id = ?').pluck();
  const insert = db.prepare(
    `INSERT INTO event_endpoints (id, workspace_id, url, event_types, description, status, all_spaces, teams, secret_sealed, secret_prefix, created_at, stamp_us)
     VALUES (@id, @ws, @url, @types, @description, @status, @all, @teams, @sealed, @prefix, @created, @stamp)`,
  );
  const update = db.prepare(
    `UPDATE event_endpoints SET url = @url, event_types = @types, description = @description, all_spaces = @all, teams = @teams, stamp_us = @stamp,
       disabled_reason = CASE WHEN @status = 'enabled' THEN NULL WHEN status = 'disabled' THEN disabled_reason END,
       failing_since_ms = CASE WHEN @status = 'enabled' AND status = 'enabled' THEN failing_since_ms END,
       status = @status
     WHERE workspace_id = @ws AND id = @id AND stamp_us = @expected`,
  );
  const rotate = db.prepare(
    `UPDATE event_endpoints SET previous_sealed = CASE WHEN @until IS NULL THEN NULL ELSE secret_sealed END, previous_until_ms = @until,
       secret_sealed = @sealed, secret_prefix = @prefix, stamp_us = MAX(stamp_us + 1, @stamp)
     WHERE workspace_id = @ws AND id = @id`,
  );
  const remove = db.prepare('DELETE FROM event_endpoints WHERE workspace_id = ? AND id = ? AND stamp_us = ?');
  const unsubscribe = db.prepare('DELETE FROM event_subscriptions WHERE endpoint_id = ?');
  const subscribe = db.prepare('INSERT INTO event_subscriptions (workspace_id, event_type, endpoint_id) VALUES (?, ?, ?)');
  const failPending = db.prepare(FAIL_PENDING);
  const read = (ws: string, id: string): EventEndpointRecord | null => {
    const row = get.get(ws, id) as EndpointRow | undefined;
    return row ? endpointOfRow(row) : null;
  };
  const resubscribe = (ws: string, record: EventEndpointRecord): void => {
    unsubscribe.run(record.id);
    for (const type of subscriptionTypes(record.status, record.eventTypes)) subscribe.run(ws, type, record.id);
    if (record.status === 'disabled') failPending.run(Date.now(), record.id);
  };
  return {
    list: async (ws) => (list.all(ws) as EndpointRow[]).map(endpointOfRow),
    get: async (ws, id) => read(ws, id),
    create: (ws, w, limit) =>
      commit.run(() => {
        if ((count.get(ws) as number) >= limit) return { ok: false as const, reason: 'limit_reached' as const };
        insert.run({
          id: w.id,
          ws,
          url: w.url,
          types: JSON.stringify(w.eventTypes),
          description: w.description,
          status: w.status,
          all: w.allSpaces ? 1 : 0,
          teams: JSON.stringify(w.teams),
          sealed: w.sealedSecret,
          prefix: w.secretPrefix,
          created: new Date().toISOString(),
          stamp: clock.next(),
        });
        const record = read(ws, w.id) as EventEndpointRecord;
        resubscribe(ws, record);
        return { ok: true as const, record };
      }),
    replace: (ws, id, expected, c) =>
      commit.run(() => {
        const params = {
          ws,
          id,
          expected,
          url: c.url,
          types: JSON.stringify(c.eventTypes),
          description: c.description,
          status: c.status,
          all: c.allSpaces ? 1 : 0,
          teams: JSON.stringify(c.teams),
          stamp: clock.next(expected),
        };
        if (update.run(params).changes !== 1) return { ok: false as const, current: read(ws, id) };
        const record = read(ws, id) as EventEndpointRecord;
        resubscribe(ws, record);
        return { ok: true as const, record };
      }),
    rotate: (ws, id, secret, until) =>
      commit.run(() => (rotate.run({ ws, id, sealed: secret.sealed, prefix: secret.prefix, until, stamp: clock.next() }).changes === 1 ? read(ws, id) : null)),
    remove: (ws, id, expected) =>
      commit.run(() => {
        if (remove.run(ws, id, expected).changes === 1) return 'removed' as const;
        return get.get(ws, id) === undefined ? ('missing' as const) : ('stale' as const);
      }),
    ...outboxMethods(db, commit, clock),
    ...secretMethods(db, commit),
  };
}

/** A SECRETS_KEY rotation's reseal of the endpoints' secrets (services/event-endpoints.ts). */
function secretMethods(db: Db, commit: GroupCommit): Pick<EventEndpointRepository, 'sealedSecrets' | 'replaceSealed'> {
  const sealedSecrets = db.prepare(
    `SELECT id, workspace_id AS workspaceId, secret_sealed AS secret, previous_sealed AS previous FROM event_endpoints WHERE id > ? ORDER BY id LIMIT CAST(? AS INTEGER)`,
  );
  const replaceSealed = {
    secret: db.prepare('UPDATE event_endpoints SET secret_sealed = ? WHERE id = ? AND secret_sealed = ?'),
    previous: db.prepare('UPDATE event_endpoints SET previous_sealed = ? WHERE id = ? AND previous_sealed = ?'),
  };
  return {
    sealedSecrets: async (after, limit) => sealedSecrets.all(after, limit) as SealedEndpointSecrets[],
    replaceSealed: (id, which, from, to) => commit.run(() => replaceSealed[which].run(to, id, from).changes === 1),
  };
}

// This function is long because it is one member per method of the outbox's part of the port, each a statement or two.
/** The outbox: the deliveries read, claimed, recorded, redelivered and pruned. */
function outboxMethods(
  db: Db,
  commit: GroupCommit,
  clock: StampClock,
): Omit<EventEndpointRepository, 'list' | 'get' | 'create' | 'replace' | 'rotate' | 'remove' | 'sealedSecrets' | 'replaceSealed'> {
  const enabled = db.prepare("SELECT 1 FROM event_endpoints WHERE workspace_id = ? AND id = ? AND status = 'enabled'").pluck();
  // The endpoint's tests are numbered on its row (the subject's row holds its number: migration 029).
  const sequence = db.prepare('UPDATE event_endpoints SET event_seq = event_seq + 1 WHERE id = ? RETURNING event_seq').pluck();
  const insertDelivery = db.prepare(
    `INSERT INTO event_deliveries (id, endpoint_id, workspace_id, event_id, event_type, body, status, next_attempt_ms, created_ms)
     VALUES (?, ?, ?, ?, 'webhook.test', ?, 'pending', ?, ?)`,
  );
  const page = db.prepare(
    `SELECT ${DELIVERY_COLUMNS} FROM event_deliveries AS d
     WHERE d.workspace_id = @ws AND d.endpoint_id = @endpoint AND d.id < @before AND (@status IS NULL OR d.status = @status)
     ORDER BY d.id DESC LIMIT CAST(@limit AS INTEGER)`,
  );
  const one = db.prepare(`SELECT ${DELIVERY_COLUMNS} FROM event_deliveries AS d WHERE d.workspace_id = ? AND d.endpoint_id = ? AND d.id = ?`);
  const redeliver = db.prepare(
    `UPDATE event_deliveries SET status = 'pending', manual = 1, next_attempt_ms = @now, finished_ms = NULL
     WHERE workspace_id = @ws AND endpoint_id = @endpoint AND id = @id AND status IN ('succeeded', 'failed')
       AND EXISTS (SELECT 1 FROM event_endpoints WHERE id = @endpoint AND status = 'enabled')`,
  );
  const deliveryState = db.prepare(
    `SELECT p.status AS endpoint_status FROM event_deliveries AS d JOIN event_endpoints AS p ON p.id = d.endpoint_id
     WHERE d.workspace_id = ? AND d.endpoint_id = ? AND d.id = ?`,
  );
  // The claim picks (event-claims.ts) and marks in the group's transaction, after the records queued
  // before it; a tick with nothing waiting, most of them, costs one index probe and no transaction.
  // The sender's claims and records are acknowledged once committed, not once on disk (shared/ack.ts):
  // one lost with a power loss only has its delivery attempted again, which at-least-once allows.
  const anyWaiting = db.prepare("SELECT 1 FROM event_deliveries WHERE status IN ('pending', 'delivering') LIMIT 1").pluck();
  const pickDue = dueDeliveryPicker(db);
  const markClaimed = db
    .prepare(
      `UPDATE event_deliveries SET status = 'delivering', attempts = attempts + 1, next_attempt_ms = @until
       WHERE rowid IN (SELECT value FROM json_each(@rowids)) AND status IN ('pending', 'delivering') AND next_attempt_ms <= @now RETURNING rowid`,
    )
    .pluck();
  const claimed = db.prepare(
    `SELECT ${CLAIM_COLUMNS} FROM event_deliveries AS d JOIN event_endpoints AS p ON p.id = d.endpoint_id
     WHERE d.rowid IN (SELECT value FROM json_each(?))`,
  );
  // A first attempt's log is its record alone (written as JSON by the caller): most deliveries take
  // one attempt, and the JSON functions parse and write the log again.
  const finish = db.prepare(
    `UPDATE event_deliveries SET status = @status, next_attempt_ms = @next, finished_ms = @finished,
       log = CASE WHEN log = '[]' THEN '[' || @attempt || ']'
         ELSE json_insert(CASE WHEN json_array_length(log) >= ${DELIVERY_LOG_ATTEMPTS} THEN json_remove(log, '$[0]') ELSE log END, '$[#]', json(@attempt)) END
     WHERE endpoint_id = @endpoint AND id = @id AND status = 'delivering' AND attempts = @attempts`,
  );
  const healthy = db.prepare('UPDATE event_endpoints SET failing_since_ms = NULL WHERE id = ? AND failing_since_ms IS NOT NULL');
  const failing = db.prepare('UPDATE event_endpoints SET failing_since_ms = COALESCE(failing_since_ms, ?) WHERE id = ?');
  const disable = db.prepare(
    `UPDATE event_endpoints SET status = 'disabled', disabled_reason = @reason, stamp_us = MAX(stamp_us + 1, @stamp)
     WHERE id = @id AND status = 'enabled' AND (@forced = 1 OR failing_since_ms <= @since)`,
  );
  const unsubscribe = db.prepare('DELETE FROM event_subscriptions WHERE endpoint_id = ?');
  const failPending = db.prepare(FAIL_PENDING);
  const failingSince = db.prepare('SELECT failing_since_ms FROM event_endpoints WHERE id = ?').pluck();
  const prune = db.prepare(
    'DELETE FROM event_deliveries WHERE rowid IN (SELECT rowid FROM event_deliveries WHERE finished_ms < ? ORDER BY finished_ms LIMIT CAST(? AS INTEGER))',
  );
  return {
    queueTest: (ws, id, nowMs) =>
      commit.run(() => {
        if (enabled.get(ws, id) === undefined) return null;
        const seq = sequence.get(id) as number;
        const deliveryId = uuidV7(nowMs);
        insertDelivery.run(deliveryId, id, ws, eventIdAt(nowMs), testEventBody(id, seq, nowMs), nowMs, nowMs);
        return deliveryId;
      }),
    deliveries: async (ws, endpoint, q) =>
      (page.all({ ws, endpoint, before: q.before ?? '\u{10ffff}', status: q.status, limit: q.limit }) as DeliveryRow[]).map(deliveryOfRow),
    delivery: async (ws, endpoint, id) => {
      const row = one.get(ws, endpoint, id) as DeliveryRow | undefined;
      return row ? deliveryOfRow(row) : null;
    },
    redeliver: (ws, endpoint, id, now) =>
      commit.run(() => {
        if (redeliver.run({ ws, endpoint, id, now }).changes === 1) return 'queued' as const;
        const state = deliveryState.get(ws, endpoint, id) as { endpoint_status: string } | undefined;
        if (!state) return 'missing' as const;
        return state.endpoint_status !== 'enabled' ? ('disabled' as const) : ('unfinished' as const);
      }),
    claimDue: async (now, until, limit, perEndpoint) =>
      anyWaiting.get() === undefined
        ? []
        : commit.run(() => {
            const rowids = pickDue(now, limit, perEndpoint);
            if (!rowids.length) return [];
            const marked = markClaimed.all({ until, now, rowids: JSON.stringify(rowids) }) as number[];
            return (claimed.all(JSON.stringify(marked)) as ClaimRow[]).map(claimOfRow);
          }, 'visible'),
    finishAttempt: ({ id, endpointId: endpoint, attempt: attempts }, outcome, now, disableAfterMs) =>
      commit.run(() => {
        const params = {
          id,
          endpoint,
          attempts,
          attempt: JSON.stringify(outcome.attempt),
          status: outcome.kind === 'retry' ? 'pending' : outcome.kind,
          next: outcome.kind === 'retry' ? outcome.retryAtMs : null,
          finished: outcome.kind === 'retry' ? null : now,
        };
        if (finish.run(params).changes !== 1) return false;
        if (outcome.kind === 'succeeded') {
          healthy.run(endpoint);
          return true;
        }
        failing.run(now, endpoint);
        const forced = outcome.kind === 'failed' && outcome.disableReason !== null;
        const since = failingSince.get(endpoint) as number | null;
        const reason = forced
          ? outcome.disableReason
          : `every delivery failed since ${new Date(since ?? now).toISOString()}; enable it again with a replace once it answers`;
        if (disable.run({ id: endpoint, reason, forced: forced ? 1 : 0, since: now - disableAfterMs, stamp: clock.next() }).changes === 1) {
          unsubscribe.run(endpoint);
          failPending.run(now, endpoint);
        }
        return true;
      }, 'visible'),
    prune: (before, limit) => commit.run(() => prune.run(before, limit).changes),
  };
}
