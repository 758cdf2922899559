// What the webhook receiver reads of triggers, retired secrets and earlier deliveries, and the
// maintenance of their rows.

export interface WebhookTarget {
  triggerId: string;
  agentId: string;
  workspaceId: string;
  /** SHA-256 (hex) of the URL's secret. */
  secretHash: string | null;
  /** The Standard Webhooks key of a signing trigger. */
  signingSecret: string | null;
}

export interface WebhookRepository {
  /** The webhook trigger with this id, or null. */
  target(triggerId: string): Promise<WebhookTarget | null>;
  /** Why the secret with this hash no longer opens `triggerId`, or null when it never did. */
  retired(triggerId: string, secretHash: string): Promise<'rotated' | 'dropped' | null>;
  /** The reply to the delivery `key` the trigger received at or after `since`, or null. */
  delivery(triggerId: string, key: string, since: string): Promise<{ runId: string; httpStatus: number } | null>;
  /** Deletes at most `limit` delivery rows received before `before`; returns how many. */
  pruneDeliveries(before: string, limit: number): Promise<number>;
  /** Deletes at most `limit` retired secrets retired before `before` (their URLs answer 404 then, not 410); how many. */
  pruneRetired(before: string, limit: number): Promise<number>;
  /** The stored signing secrets (sealed, or from before sealing), by trigger id after `after`, at most `limit`. */
  signingSecrets(after: string, limit: number): Promise<{ triggerId: string; signingSecret: string }[]>;
  /** Replaces a trigger's stored signing secret while it is still `expected`; whether it did. */
  replaceSigningSecret(triggerId: string, expected: string, next: string): Promise<boolean>;
}
