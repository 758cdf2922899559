// What the webhook receiver reads: the trigger a URL names (with the hash of its secret), secrets
// that no longer open their trigger, earlier deliveries by id. The delivery's row and its count
// against the trigger's rate are written with its run (runs.ts: accept), in one transaction.
import type { Db } from './db';
import type { GroupCommit } from './group-commit';

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

export function webhookRepository(db: Db, commit: GroupCommit): WebhookRepository {
  const target = db.prepare(
    `SELECT t.id AS triggerId, t.agent_id AS agentId, a.workspace_id AS workspaceId, t.secret_hash AS secretHash, t.signing_secret AS signingSecret
     FROM agent_triggers t JOIN agents a ON a.id = t.agent_id WHERE t.id = ? AND t.kind = 'webhook'`,
  );
  const retired = db.prepare('SELECT reason FROM retired_webhook_secrets WHERE secret_hash = ? AND trigger_id = ?').pluck();
  const delivery = db.prepare('SELECT run_id AS runId, http_status AS httpStatus FROM webhook_deliveries WHERE trigger_id = ? AND delivery_key = ? AND received_at >= ?');
  const prune = db.prepare('DELETE FROM webhook_deliveries WHERE rowid IN (SELECT rowid FROM webhook_deliveries WHERE received_at < ? LIMIT ?)');
  const pruneRetired = db.prepare('DELETE FROM retired_webhook_secrets WHERE rowid IN (SELECT rowid FROM retired_webhook_secrets WHERE retired_at < ? LIMIT ?)');
  const signing = db.prepare(
    'SELECT id AS triggerId, signing_secret AS signingSecret FROM agent_triggers WHERE signing_secret IS NOT NULL AND id > ? ORDER BY id LIMIT ?',
  );
  const replaceSigning = db.prepare('UPDATE agent_triggers SET signing_secret = ? WHERE id = ? AND signing_secret = ?');
  return {
    target: async (triggerId) => (target.get(triggerId) as WebhookTarget | undefined) ?? null,
    retired: async (triggerId, hash) => (retired.get(hash, triggerId) as 'rotated' | 'dropped' | undefined) ?? null,
    delivery: async (triggerId, key, since) => (delivery.get(triggerId, key, since) as { runId: string; httpStatus: number } | undefined) ?? null,
    pruneDeliveries: (before, limit) => commit.run(() => prune.run(before, limit).changes, 'visible'),
    pruneRetired: (before, limit) => commit.run(() => pruneRetired.run(before, limit).changes, 'visible'),
    signingSecrets: async (after, limit) => signing.all(after, limit) as { triggerId: string; signingSecret: string }[],
    replaceSigningSecret: (triggerId, expected, next) => commit.run(() => replaceSigning.run(next, triggerId, expected).changes === 1),
  };
}
