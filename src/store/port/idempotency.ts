// Idempotency keys: the claim of a key by its first request, and the reply stored for its repeats.

export interface IdempotencyKey {
  workspaceId: string;
  userId: string;
  operation: string;
  key: string;
}

export interface StoredReply {
  status: number;
  headers: Record<string, string>;
  /** The reply's body, as sent. */
  body: string;
}

export type BeginOutcome =
  | { outcome: 'claimed' }
  /** Another request holds the key: its fingerprint, and its reply once it has one. */
  | { outcome: 'held'; fingerprint: string; reply: StoredReply | null };

export interface IdempotencyRepository {
  /**
   * Claims the key for a request: a new row, or one whose key expired (`created_at` before
   * `expiredBefore`) or whose request died in flight (no reply, `locked_until` past). Otherwise the row as it is.
   */
  begin(key: IdempotencyKey, fingerprint: string, now: string, lockedUntil: string, expiredBefore: string): Promise<BeginOutcome>;
  /** Stores the claimed request's reply. */
  complete(key: IdempotencyKey, fingerprint: string, reply: StoredReply): Promise<void>;
  /** Forgets a claim whose request failed unexpectedly, so a retry is handled again. */
  release(key: IdempotencyKey, fingerprint: string): Promise<void>;
  /** Deletes up to `limit` keys created before `before`; how many. */
  prune(before: string, limit: number): Promise<number>;
}
