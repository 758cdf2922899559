// What both adapters share of the idempotency keys: the first request with a key claims its row by
// one conditional upsert (of concurrent first requests on any process, one claims it), its reply is
// stored on the row once answered, and a repeat reads the row: the stored reply, or "in flight"
// while the row has none. Parameters are the key's members (@workspaceId, @userId, @operation, @key).
import type { StoredReply } from '../port';

/** A new row, or an expired (@expiredBefore) or abandoned (no reply, locked_until past) one taken over. */
export const CLAIM_KEY = `INSERT INTO idempotency_keys (workspace_id, user_id, operation, key, fingerprint, created_at, locked_until)
  VALUES (@workspaceId, @userId, @operation, @key, @fingerprint, @now, @lockedUntil)
  ON CONFLICT (workspace_id, user_id, operation, key) DO UPDATE SET fingerprint = excluded.fingerprint,
    created_at = excluded.created_at, locked_until = excluded.locked_until, status = NULL, headers = NULL, body = NULL
  WHERE idempotency_keys.created_at < @expiredBefore OR (idempotency_keys.status IS NULL AND idempotency_keys.locked_until < @now)`;

const KEY_MATCHES = 'workspace_id = @workspaceId AND user_id = @userId AND operation = @operation AND key = @key';

export const READ_KEY = `SELECT fingerprint, status, headers, body FROM idempotency_keys WHERE ${KEY_MATCHES}`;

/** The claimed request's reply, stored once: only by the claim that holds the row (@fingerprint), while it has none. */
export const COMPLETE_KEY = `UPDATE idempotency_keys SET status = @status, headers = @headers, body = @body
  WHERE ${KEY_MATCHES} AND fingerprint = @fingerprint AND status IS NULL`;

/** Forgets a claim whose request failed unexpectedly (and only that claim, before it has a reply). */
export const RELEASE_KEY = `DELETE FROM idempotency_keys WHERE ${KEY_MATCHES} AND fingerprint = @fingerprint AND status IS NULL`;

export type KeyRow = { fingerprint: string; status: number | null; headers: string | null; body: string | null };

export const replyOf = (row: KeyRow): StoredReply | null =>
  row.status === null ? null : { status: row.status, headers: JSON.parse(row.headers as string) as Record<string, string>, body: row.body as string };
