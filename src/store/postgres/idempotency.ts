// Idempotency keys on PostgreSQL (see store/idempotency.ts): the first request with a key claims
// its row by one conditional upsert, so of concurrent first requests on any replicas one claims it.
import type { BeginOutcome, IdempotencyKey, IdempotencyRepository, StoredReply } from '../port';
import type { PgDatabase } from './database';

/** The key's columns as the first four parameters. */
const keyParams = (k: IdempotencyKey) => [k.workspaceId, k.userId, k.operation, k.key];
const KEY_MATCHES = 'workspace_id = $1 AND user_id = $2 AND operation = $3 AND key = $4';

type Row = { fingerprint: string; status: number | null; headers: string | null; body: string | null };

const replyOf = (row: Row): StoredReply | null =>
  row.status === null ? null : { status: row.status, headers: JSON.parse(row.headers as string) as Record<string, string>, body: row.body as string };

export function pgIdempotencyRepository(db: PgDatabase): IdempotencyRepository {
  return {
    begin: (key, fingerprint, now, lockedUntil, expiredBefore) =>
      db.transaction(async (sql): Promise<BeginOutcome> => {
        // A new row, or an expired or abandoned one taken over. When the WHERE refuses, PostgreSQL
        // still locks the row it conflicted with: it cannot go (a release) before the read below.
        const claimed = await sql.count(
          `INSERT INTO idempotency_keys (workspace_id, user_id, operation, key, fingerprint, created_at, locked_until)
           VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (workspace_id, user_id, operation, key) DO UPDATE SET fingerprint = excluded.fingerprint,
             created_at = excluded.created_at, locked_until = excluded.locked_until, status = NULL, headers = NULL, body = NULL
           WHERE idempotency_keys.created_at < $8 OR (idempotency_keys.status IS NULL AND idempotency_keys.locked_until < $6)`,
          [...keyParams(key), fingerprint, now, lockedUntil, expiredBefore],
        );
        if (claimed === 1) return { outcome: 'claimed' };
        const row = (await sql.row<Row>(`SELECT fingerprint, status, headers, body FROM idempotency_keys WHERE ${KEY_MATCHES}`, keyParams(key)))!;
        return { outcome: 'held', fingerprint: row.fingerprint, reply: replyOf(row) };
      }),
    complete: async (key, fingerprint, reply) => {
      await db.count(`UPDATE idempotency_keys SET status = $6, headers = $7, body = $8 WHERE ${KEY_MATCHES} AND fingerprint = $5 AND status IS NULL`, [
        ...keyParams(key),
        fingerprint,
        reply.status,
        JSON.stringify(reply.headers),
        reply.body,
      ]);
    },
    release: async (key, fingerprint) => {
      await db.count(`DELETE FROM idempotency_keys WHERE ${KEY_MATCHES} AND fingerprint = $5 AND status IS NULL`, [...keyParams(key), fingerprint]);
    },
    // By ctid (PostgreSQL has no rowid); the age is checked again on the row deleted, so a key
    // claimed anew meanwhile (a newer created_at) stays.
    prune: (before, limit) =>
      db.count(
        `DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(SELECT ctid FROM idempotency_keys WHERE created_at < $1 LIMIT $2)) AND created_at < $1`,
        [before, limit],
      ),
  };
}
