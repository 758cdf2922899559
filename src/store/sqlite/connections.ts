// The workspaces' connections on SQLite: their credentials (sealed by the services), their last
// check, and the access token an OAuth 2.0 connection holds. Each write is its own savepoint of a
// group commit; every compare-and-set is the statement's affected-row count.
import type { StampClock } from '../../domain/stamps';
import type { Connection } from '../../domain/types';
import type { ConnectionRecord, ConnectionRepository, SealedConnectionValues } from '../port';
import { CONNECTION_COLUMNS, connectionOfRow, type ConnectionRow } from '../shared/apps';
import type { Db } from './database';
import type { GroupCommit } from './group-commit';

// This function is long because it is one member per method of the port, each a statement or two
// (the sealed values' methods are apart: secretMethods).
export function connectionRepository(db: Db, commit: GroupCommit, clock: StampClock): ConnectionRepository {
  const list = db.prepare('SELECT ref, app, label, status FROM connections WHERE workspace_id = ? ORDER BY ref');
  const upsert = db.prepare(
    `INSERT INTO connections (workspace_id, ref, app, label, status, created_at, stamp_us) VALUES (@ws, @ref, @app, @label, @status, @created, @stamp)
     ON CONFLICT (workspace_id, ref) DO UPDATE SET app = excluded.app, label = excluded.label, status = excluded.status, stamp_us = excluded.stamp_us`,
  );
  const get = db.prepare(`SELECT ${CONNECTION_COLUMNS} FROM connections WHERE workspace_id = ? AND ref = ?`);
  const byReceiver = db.prepare(`SELECT workspace_id, ${CONNECTION_COLUMNS} FROM connections WHERE receiver_id = ?`);
  const count = db.prepare('SELECT COUNT(*) FROM connections WHERE workspace_id = ?').pluck();
  const insert = db.prepare(
    `INSERT INTO connections (workspace_id, ref, app, label, status, created_at, credentials_shown, credentials_sealed, last_error, tested_at, stamp_us, receiver_id)
     VALUES (@ws, @ref, @app, @label, @status, @created, @shown, @sealed, @error, @tested, @stamp, @receiver)`,
  );
  // A null @shown keeps the stored credentials (and the token held with them).
  const update = db.prepare(
    `UPDATE connections SET label = @label, status = @status, last_error = @error, tested_at = @tested, stamp_us = @stamp,
       credentials_shown = COALESCE(@shown, credentials_shown),
       credentials_sealed = CASE WHEN @shown IS NULL THEN credentials_sealed ELSE @sealed END,
       previous_sealed = CASE WHEN @shown IS NULL THEN previous_sealed ELSE @previous END,
       previous_until_ms = CASE WHEN @shown IS NULL THEN previous_until_ms ELSE @previousUntil END,
       token_sealed = CASE WHEN @shown IS NULL THEN token_sealed END,
       token_expires_ms = CASE WHEN @shown IS NULL THEN token_expires_ms END
     WHERE workspace_id = @ws AND ref = @ref AND stamp_us = @expected`,
  );
  const checked = db.prepare(
    'UPDATE connections SET status = @status, last_error = @error, tested_at = @tested, stamp_us = MAX(stamp_us + 1, @stamp) WHERE workspace_id = @ws AND ref = @ref',
  );
  const remove = db.prepare('DELETE FROM connections WHERE workspace_id = ? AND ref = ? AND stamp_us = ?');
  const read = (ws: string, ref: string): ConnectionRecord | null => {
    const row = get.get(ws, ref) as ConnectionRow | undefined;
    return row ? connectionOfRow(row) : null;
  };
  return {
    list: async (ws) => list.all(ws) as Connection[],
    upsert: (ws, c) =>
      commit.run(() => {
        upsert.run({ ws, ref: c.ref, app: c.app, label: c.label, status: c.status, created: new Date().toISOString(), stamp: clock.next() });
      }),
    get: async (ws, ref) => read(ws, ref),
    byReceiver: async (receiverId) => {
      const row = byReceiver.get(receiverId) as (ConnectionRow & { workspace_id: string }) | undefined;
      return row ? { workspaceId: row.workspace_id, record: connectionOfRow(row) } : null;
    },
    create: (ws, w, limit) =>
      commit.run(() => {
        if ((count.get(ws) as number) >= limit) return { ok: false, reason: 'limit_reached' as const };
        if (get.get(ws, w.ref) !== undefined) return { ok: false, reason: 'ref_taken' as const };
        insert.run({
          ws,
          ref: w.ref,
          app: w.app,
          label: w.label,
          status: w.status,
          created: new Date().toISOString(),
          shown: JSON.stringify(w.credentialsShown),
          sealed: w.sealedCredentials,
          error: w.lastError,
          tested: w.testedAt,
          stamp: clock.next(),
          receiver: w.receiverId,
        });
        return { ok: true as const, record: read(ws, w.ref) as ConnectionRecord };
      }),
    replace: (ws, ref, expected, w) =>
      commit.run(() => {
        const params = {
          ws,
          ref,
          expected,
          label: w.label,
          status: w.status,
          error: w.lastError,
          tested: w.testedAt,
          stamp: clock.next(expected),
          shown: w.credentialsShown === undefined ? null : JSON.stringify(w.credentialsShown),
          sealed: w.sealedCredentials ?? null,
          previous: w.previous?.sealed ?? null,
          previousUntil: w.previous?.untilMs ?? null,
        };
        return update.run(params).changes === 1
          ? { ok: true as const, record: read(ws, ref) as ConnectionRecord }
          : { ok: false as const, current: read(ws, ref) };
      }),
    recordCheck: (ws, ref, c) =>
      commit.run(() =>
        checked.run({ ws, ref, status: c.status, error: c.lastError, tested: c.testedAt, stamp: clock.next() }).changes === 1 ? read(ws, ref) : null,
      ),
    remove: (ws, ref, expected) =>
      commit.run(() => {
        if (remove.run(ws, ref, expected).changes === 1) return 'removed' as const;
        return get.get(ws, ref) === undefined ? ('missing' as const) : ('stale' as const);
      }),
    ...secretMethods(db, commit),
  };
}

/** What a connection keeps sealed beyond its credentials: the access token, its renewal, and a key rotation's reseal. */
function secretMethods(db: Db, commit: GroupCommit): Pick<ConnectionRepository, 'claimRenewal' | 'storeToken' | 'sealedValues' | 'replaceSealed'> {
  const claim = db.prepare(
    `UPDATE connections SET renewing_until_ms = @until
     WHERE workspace_id = @ws AND ref = @ref AND (renewing_until_ms IS NULL OR renewing_until_ms <= @now)
       AND (token_expires_ms IS NULL OR token_expires_ms <= @renewBefore)`,
  );
  const keepToken = db.prepare(
    'UPDATE connections SET token_sealed = @sealed, token_expires_ms = @expires, renewing_until_ms = NULL WHERE workspace_id = @ws AND ref = @ref',
  );
  const sealedAfter = db.prepare(
    `SELECT workspace_id AS workspaceId, ref, credentials_sealed AS credentials, token_sealed AS token, previous_sealed AS previous FROM connections
     WHERE (workspace_id, ref) > (@ws, @ref) AND (credentials_sealed IS NOT NULL OR token_sealed IS NOT NULL OR previous_sealed IS NOT NULL)
     ORDER BY workspace_id, ref LIMIT CAST(@limit AS INTEGER)`,
  );
  const resealed = {
    credentials: db.prepare('UPDATE connections SET credentials_sealed = @to WHERE workspace_id = @ws AND ref = @ref AND credentials_sealed = @from'),
    token: db.prepare('UPDATE connections SET token_sealed = @to WHERE workspace_id = @ws AND ref = @ref AND token_sealed = @from'),
    previous: db.prepare('UPDATE connections SET previous_sealed = @to WHERE workspace_id = @ws AND ref = @ref AND previous_sealed = @from'),
  };
  return {
    claimRenewal: (ws, ref, now, until, renewBefore) => commit.run(() => claim.run({ ws, ref, now, until, renewBefore }).changes === 1),
    sealedValues: async (after, limit) => sealedAfter.all({ ws: after?.workspaceId ?? '', ref: after?.ref ?? '', limit }) as SealedConnectionValues[],
    replaceSealed: (ws, ref, which, from, to) => commit.run(() => resealed[which].run({ ws, ref, from, to }).changes === 1),
    storeToken: (ws, ref, sealed, expires) =>
      commit.run(() => {
        keepToken.run({ ws, ref, sealed, expires });
      }),
  };
}
