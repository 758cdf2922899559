// Idempotency keys on PostgreSQL (see shared/idempotency.ts), for any number of replicas.
import type { BeginOutcome, IdempotencyKey, IdempotencyRepository } from '../port';
import { CLAIM_KEY, COMPLETE_KEY, READ_KEY, RELEASE_KEY, replyOf, type KeyRow } from '../shared/idempotency';
import { numbered } from '../shared/statements';
import type { PgDatabase } from './database';

const claimKey = numbered(CLAIM_KEY);
const readKey = numbered(READ_KEY);
const completeKey = numbered(COMPLETE_KEY);
const releaseKey = numbered(RELEASE_KEY);

const keyParams = (k: IdempotencyKey) => ({ workspaceId: k.workspaceId, userId: k.userId, operation: k.operation, key: k.key });

export function pgIdempotencyRepository(db: PgDatabase): IdempotencyRepository {
  return {
    begin: (key, fingerprint, now, lockedUntil, expiredBefore) =>
      db.transaction(async (sql): Promise<BeginOutcome> => {
        // When the claim's WHERE refuses, PostgreSQL still locks the row it conflicted with: it
        // cannot go (a release) before the read below.
        const claimed = await sql.count(claimKey.text, claimKey.values({ ...keyParams(key), fingerprint, now, lockedUntil, expiredBefore }));
        if (claimed === 1) return { outcome: 'claimed' };
        const row = (await sql.row<KeyRow>(readKey.text, readKey.values(keyParams(key))))!;
        return { outcome: 'held', fingerprint: row.fingerprint, reply: replyOf(row) };
      }),
    complete: async (key, fingerprint, reply) => {
      const params = { ...keyParams(key), fingerprint, status: reply.status, headers: JSON.stringify(reply.headers), body: reply.body };
      await db.count(completeKey.text, completeKey.values(params));
    },
    release: async (key, fingerprint) => {
      await db.count(releaseKey.text, releaseKey.values({ ...keyParams(key), fingerprint }));
    },
    // By ctid (PostgreSQL has no rowid); the age is checked again on the row deleted, so a key
    // claimed anew meanwhile (a newer created_at) stays.
    prune: (before, limit) =>
      db.count(`DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(SELECT ctid FROM idempotency_keys WHERE created_at < $1 LIMIT $2)) AND created_at < $1`, [
        before,
        limit,
      ]),
  };
}
