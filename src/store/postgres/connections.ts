// The workspaces' connections on PostgreSQL, for any number of replicas: their credentials (sealed
// by the services), their last check, and the access token an OAuth 2.0 connection holds, which
// one replica at a time renews (claimRenewal: a conditional write, one winner).
import type { StampClock } from '../../domain/stamps';
import type { Connection } from '../../domain/types';
import type { ConnectionRecord, ConnectionRepository, SealedConnectionValues } from '../port';
import { CONNECTION_COLUMNS, connectionOfRow, type ConnectionRow } from '../shared/apps';
import { holdsNul } from './documents';
import { isUniqueViolation, type PgDatabase, type Sql } from './database';

const read = async (sql: Sql, ws: string, ref: string): Promise<ConnectionRecord | null> => {
  if (holdsNul(ref)) return null;
  const row = await sql.row<ConnectionRow>(`SELECT ${CONNECTION_COLUMNS} FROM connections WHERE workspace_id = $1 AND ref = $2`, [ws, ref]);
  return row ? connectionOfRow(row) : null;
};

// This function is long because it is one member per method of the port, each a statement or two
// (the sealed values' methods are apart: secretMethods).
export function pgConnectionRepository(db: PgDatabase, clock: StampClock): ConnectionRepository {
  return {
    list: (ws) => db.rows<Connection>('SELECT ref, app, label, status FROM connections WHERE workspace_id = $1 ORDER BY ref', [ws]),
    upsert: async (ws, c) => {
      await db.count(
        `INSERT INTO connections (workspace_id, ref, app, label, status, created_at, stamp_us) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (workspace_id, ref) DO UPDATE SET app = excluded.app, label = excluded.label, status = excluded.status, stamp_us = excluded.stamp_us`,
        [ws, c.ref, c.app, c.label, c.status, new Date().toISOString(), clock.next()],
      );
    },
    get: (ws, ref) => read(db, ws, ref),
    byReceiver: async (receiverId) => {
      if (holdsNul(receiverId)) return null;
      const row = await db.row<ConnectionRow & { workspace_id: string }>(`SELECT workspace_id, ${CONNECTION_COLUMNS} FROM connections WHERE receiver_id = $1`, [
        receiverId,
      ]);
      return row ? { workspaceId: row.workspace_id, record: connectionOfRow(row) } : null;
    },
    create: async (ws, w, limit) => {
      try {
        return await db.transaction(async (sql) => {
          await sql.row('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`connections:${ws}`]);
          const { n } = (await sql.row<{ n: number }>('SELECT COUNT(*) AS n FROM connections WHERE workspace_id = $1', [ws]))!;
          if (n >= limit) return { ok: false, reason: 'limit_reached' as const };
          await sql.count(
            `INSERT INTO connections (workspace_id, ref, app, label, status, created_at, credentials_shown, credentials_sealed, last_error, tested_at, stamp_us, receiver_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
            [
              ws,
              w.ref,
              w.app,
              w.label,
              w.status,
              new Date().toISOString(),
              JSON.stringify(w.credentialsShown),
              w.sealedCredentials,
              w.lastError,
              w.testedAt,
              clock.next(),
              w.receiverId,
            ],
          );
          return { ok: true as const, record: (await read(sql, ws, w.ref)) as ConnectionRecord };
        });
      } catch (err) {
        if (isUniqueViolation(err)) return { ok: false, reason: 'ref_taken' as const };
        throw err;
      }
    },
    replace: async (ws, ref, expected, w) => {
      // A null $7 keeps the stored credentials (and the token held with them).
      const changed = await db.count(
        `UPDATE connections SET label = $3, status = $4, last_error = $5, tested_at = $6,
           credentials_shown = COALESCE($7, credentials_shown),
           credentials_sealed = CASE WHEN $7::text IS NULL THEN credentials_sealed ELSE $8 END,
           previous_sealed = CASE WHEN $7::text IS NULL THEN previous_sealed ELSE $11 END,
           previous_until_ms = CASE WHEN $7::text IS NULL THEN previous_until_ms ELSE $12::bigint END,
           token_sealed = CASE WHEN $7::text IS NULL THEN token_sealed END,
           token_expires_ms = CASE WHEN $7::text IS NULL THEN token_expires_ms END,
           stamp_us = $9
         WHERE workspace_id = $1 AND ref = $2 AND stamp_us = $10`,
        [
          ws,
          ref,
          w.label,
          w.status,
          w.lastError,
          w.testedAt,
          w.credentialsShown === undefined ? null : JSON.stringify(w.credentialsShown),
          w.sealedCredentials ?? null,
          clock.next(expected),
          expected,
          w.previous?.sealed ?? null,
          w.previous?.untilMs ?? null,
        ],
      );
      return changed === 1
        ? { ok: true as const, record: (await read(db, ws, ref)) as ConnectionRecord }
        : { ok: false as const, current: await read(db, ws, ref) };
    },
    recordCheck: async (ws, ref, c) => {
      const row = await db.row<ConnectionRow>(
        `UPDATE connections SET status = $3, last_error = $4, tested_at = $5, stamp_us = GREATEST(stamp_us + 1, $6)
         WHERE workspace_id = $1 AND ref = $2 RETURNING ${CONNECTION_COLUMNS}`,
        [ws, ref, c.status, c.lastError, c.testedAt, clock.next()],
      );
      return row ? connectionOfRow(row) : null;
    },
    remove: async (ws, ref, expected) => {
      if ((await db.count('DELETE FROM connections WHERE workspace_id = $1 AND ref = $2 AND stamp_us = $3', [ws, ref, expected])) === 1) return 'removed';
      return (await read(db, ws, ref)) ? 'stale' : 'missing';
    },
    ...secretMethods(db),
  };
}

const SEALED_COLUMN = { credentials: 'credentials_sealed', token: 'token_sealed', previous: 'previous_sealed' } as const;

/** What a connection keeps sealed beyond its credentials: the access token, its renewal, and a key rotation's reseal. */
function secretMethods(db: PgDatabase): Pick<ConnectionRepository, 'claimRenewal' | 'storeToken' | 'sealedValues' | 'replaceSealed'> {
  return {
    claimRenewal: async (ws, ref, now, until, renewBefore) =>
      (await db.count(
        `UPDATE connections SET renewing_until_ms = $4 WHERE workspace_id = $1 AND ref = $2 AND (renewing_until_ms IS NULL OR renewing_until_ms <= $3)
           AND (token_expires_ms IS NULL OR token_expires_ms <= $5)`,
        [ws, ref, now, until, renewBefore],
      )) === 1,
    sealedValues: (after, limit) =>
      db.rows<SealedConnectionValues>(
        `SELECT workspace_id AS "workspaceId", ref, credentials_sealed AS credentials, token_sealed AS token, previous_sealed AS previous FROM connections
         WHERE (workspace_id, ref) > ($1, $2) AND (credentials_sealed IS NOT NULL OR token_sealed IS NOT NULL OR previous_sealed IS NOT NULL)
         ORDER BY workspace_id, ref LIMIT $3`,
        [after?.workspaceId ?? '', after?.ref ?? '', limit],
      ),
    replaceSealed: async (ws, ref, which, from, to) =>
      (await db.count(`UPDATE connections SET ${SEALED_COLUMN[which]} = $4 WHERE workspace_id = $1 AND ref = $2 AND ${SEALED_COLUMN[which]} = $3`, [
        ws,
        ref,
        from,
        to,
      ])) === 1,
    storeToken: async (ws, ref, sealed, expires) => {
      await db.count('UPDATE connections SET token_sealed = $3, token_expires_ms = $4, renewing_until_ms = NULL WHERE workspace_id = $1 AND ref = $2', [
        ws,
        ref,
        sealed,
        expires,
      ]);
    },
  };
}
