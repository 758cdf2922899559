// Idempotency keys: the first request with a key claims its row (one conditional upsert: of
// concurrent first requests, one claims it), and its reply is stored on the row once answered. A
// repeat reads the row: the stored reply, or "in flight" while the row has none.
import type { Db } from './database';
import type { GroupCommit } from './group-commit';
import type { BeginOutcome, IdempotencyRepository } from '../port';


export function idempotencyRepository(db: Db, commit: GroupCommit): IdempotencyRepository {
  const claim = db.prepare(
    `INSERT INTO idempotency_keys (workspace_id, user_id, operation, key, fingerprint, created_at, locked_until)
     VALUES (@workspaceId, @userId, @operation, @key, @fingerprint, @now, @lockedUntil)
     ON CONFLICT (workspace_id, user_id, operation, key) DO UPDATE SET fingerprint = excluded.fingerprint,
       created_at = excluded.created_at, locked_until = excluded.locked_until, status = NULL, headers = NULL, body = NULL
     WHERE idempotency_keys.created_at < @expiredBefore OR (idempotency_keys.status IS NULL AND idempotency_keys.locked_until < @now)`,
  );
  const read = db.prepare(
    'SELECT fingerprint, status, headers, body FROM idempotency_keys WHERE workspace_id = @workspaceId AND user_id = @userId AND operation = @operation AND key = @key',
  );
  const complete = db.prepare(
    `UPDATE idempotency_keys SET status = @status, headers = @headers, body = @body
     WHERE workspace_id = @workspaceId AND user_id = @userId AND operation = @operation AND key = @key AND fingerprint = @fingerprint AND status IS NULL`,
  );
  const release = db.prepare(
    `DELETE FROM idempotency_keys WHERE workspace_id = @workspaceId AND user_id = @userId AND operation = @operation AND key = @key
       AND fingerprint = @fingerprint AND status IS NULL`,
  );
  const prune = db.prepare('DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE created_at < ? LIMIT ?)');
  type Row = { fingerprint: string; status: number | null; headers: string | null; body: string | null };
  return {
    begin: (key, fingerprint, now, lockedUntil, expiredBefore) =>
      commit.run((): BeginOutcome => {
        if (claim.run({ ...key, fingerprint, now, lockedUntil, expiredBefore }).changes === 1) return { outcome: 'claimed' };
        const row = read.get(key) as Row;
        const reply = row.status === null ? null : { status: row.status, headers: JSON.parse(row.headers as string) as Record<string, string>, body: row.body as string };
        return { outcome: 'held', fingerprint: row.fingerprint, reply };
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
