// Idempotency keys on SQLite (see shared/idempotency.ts).
import type { BeginOutcome, IdempotencyRepository } from '../port';
import { CLAIM_KEY, COMPLETE_KEY, READ_KEY, RELEASE_KEY, replyOf, type KeyRow } from '../shared/idempotency';
import type { Db } from './database';
import type { GroupCommit } from './group-commit';

export function idempotencyRepository(db: Db, commit: GroupCommit): IdempotencyRepository {
  const claim = db.prepare(CLAIM_KEY);
  const read = db.prepare(READ_KEY);
  const complete = db.prepare(COMPLETE_KEY);
  const release = db.prepare(RELEASE_KEY);
  const prune = db.prepare('DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE created_at < ? LIMIT CAST(? AS INTEGER))');
  return {
    begin: (key, fingerprint, now, lockedUntil, expiredBefore) =>
      commit.run((): BeginOutcome => {
        if (claim.run({ ...key, fingerprint, now, lockedUntil, expiredBefore }).changes === 1) return { outcome: 'claimed' };
        const row = read.get(key) as KeyRow;
        return { outcome: 'held', fingerprint: row.fingerprint, reply: replyOf(row) };
      }),
    complete: (key, fingerprint, reply) =>
      commit.run(() => {
        complete.run({ ...key, fingerprint, status: reply.status, headers: JSON.stringify(reply.headers), body: reply.body });
      }),
    release: (key, fingerprint) =>
      commit.run(() => {
        release.run({ ...key, fingerprint });
      }),
    prune: (before, limit) => commit.run(() => prune.run(before, limit).changes, 'visible'),
  };
}
