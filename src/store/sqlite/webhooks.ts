// What the webhook receiver reads: the trigger a URL names (with the hash of its secret), secrets
// that no longer open their trigger, earlier deliveries by id. The delivery's row and its count
// against the trigger's rate are written with its run (runs.ts: accept), in one transaction.
import type { Db } from './database';
import type { GroupCommit } from './group-commit';
import type { WebhookRepository, WebhookTarget } from '../port';

export function webhookRepository(db: Db, commit: GroupCommit): WebhookRepository {
  const target = db.prepare(
    `SELECT t.id AS triggerId, t.agent_id AS agentId, a.workspace_id AS workspaceId, t.secret_hash AS secretHash, t.signing_secret AS signingSecret
     FROM agent_triggers t JOIN agents a ON a.id = t.agent_id WHERE t.id = ? AND t.kind = 'webhook'`,
  );
  const retired = db.prepare('SELECT reason FROM retired_webhook_secrets WHERE secret_hash = ? AND trigger_id = ?').pluck();
  const delivery = db.prepare(
    'SELECT run_id AS runId, http_status AS httpStatus FROM webhook_deliveries WHERE trigger_id = ? AND delivery_key = ? AND received_at >= ?',
  );
  const prune = db.prepare(
    'DELETE FROM webhook_deliveries WHERE rowid IN (SELECT rowid FROM webhook_deliveries WHERE received_at < ? LIMIT CAST(? AS INTEGER))',
  );
  const pruneRetired = db.prepare(
    'DELETE FROM retired_webhook_secrets WHERE rowid IN (SELECT rowid FROM retired_webhook_secrets WHERE retired_at < ? LIMIT CAST(? AS INTEGER))',
  );
  const signing = db.prepare(
    'SELECT id AS triggerId, signing_secret AS signingSecret FROM agent_triggers WHERE signing_secret IS NOT NULL AND id > ? ORDER BY id LIMIT CAST(? AS INTEGER)',
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
