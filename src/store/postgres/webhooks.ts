// What the webhook receiver reads on PostgreSQL (see store/webhooks.ts). The delivery's row and its
// count against the trigger's rate are written with its run (runs.ts: accept).
import type { WebhookRepository, WebhookTarget } from '../port';
import type { PgDatabase } from './database';
import { holdsNul } from './documents';

export function pgWebhookRepository(db: PgDatabase): WebhookRepository {
  return {
    // A trigger id comes from the URL: one PostgreSQL cannot hold names no trigger.
    target: async (triggerId) => {
      if (holdsNul(triggerId)) return null;
      const target = await db.row<WebhookTarget>(
        `SELECT t.id AS "triggerId", t.agent_id AS "agentId", a.workspace_id AS "workspaceId", t.secret_hash AS "secretHash", t.signing_secret AS "signingSecret"
         FROM agent_triggers t JOIN agents a ON a.id = t.agent_id WHERE t.id = $1 AND t.kind = 'webhook'`,
        [triggerId],
      );
      return target ?? null;
    },
    retired: async (triggerId, hash) => {
      if (holdsNul(triggerId) || holdsNul(hash)) return null;
      const row = await db.row<{ reason: 'rotated' | 'dropped' }>('SELECT reason FROM retired_webhook_secrets WHERE secret_hash = $1 AND trigger_id = $2', [
        hash,
        triggerId,
      ]);
      return row?.reason ?? null;
    },
    delivery: async (triggerId, key, since) => {
      if (holdsNul(triggerId) || holdsNul(key)) return null;
      const row = await db.row<{ runId: string; httpStatus: number }>(
        'SELECT run_id AS "runId", http_status AS "httpStatus" FROM webhook_deliveries WHERE trigger_id = $1 AND delivery_key = $2 AND received_at >= $3',
        [triggerId, key, since],
      );
      return row ?? null;
    },
    // By ctid (PostgreSQL has no rowid); the condition is checked again on the row deleted, in case another writer changed it.
    pruneDeliveries: (before, limit) =>
      db.count(
        `DELETE FROM webhook_deliveries WHERE ctid = ANY (ARRAY(SELECT ctid FROM webhook_deliveries WHERE received_at < $1 LIMIT $2)) AND received_at < $1`,
        [before, limit],
      ),
    pruneRetired: (before, limit) =>
      db.count(
        `DELETE FROM retired_webhook_secrets WHERE ctid = ANY (ARRAY(SELECT ctid FROM retired_webhook_secrets WHERE retired_at < $1 LIMIT $2)) AND retired_at < $1`,
        [before, limit],
      ),
    signingSecrets: (after, limit) =>
      db.rows<{ triggerId: string; signingSecret: string }>(
        'SELECT id AS "triggerId", signing_secret AS "signingSecret" FROM agent_triggers WHERE signing_secret IS NOT NULL AND id > $1 ORDER BY id LIMIT $2',
        [after, limit],
      ),
    replaceSigningSecret: async (triggerId, expected, next) =>
      (await db.count('UPDATE agent_triggers SET signing_secret = $1 WHERE id = $2 AND signing_secret = $3', [next, triggerId, expected])) === 1,
  };
}
