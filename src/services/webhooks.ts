// Webhook secrets: 32 random bytes, shown once inside the trigger's URL, stored only as a SHA-256
// hash next to a short display prefix. Nothing here logs or returns a secret twice.
import crypto from 'node:crypto';
import { SECRET_PREFIX_LENGTH } from '../domain/agent';
import type { Trigger } from '../domain/types';

export interface WebhookSecret {
  triggerId: string;
  hash: string;
  prefix: string;
  /** The one-time URL; it carries the secret, so it goes into one response and nowhere else. */
  url: string;
}

export function hashSecret(secret: string): string {
  return crypto.createHash('sha256').update(secret).digest('hex');
}

export function mintWebhookSecret(triggerId: string, publicBaseUrl: string): WebhookSecret {
  const secret = `whk_${crypto.randomBytes(32).toString('base64url')}`;
  return {
    triggerId,
    hash: hashSecret(secret),
    prefix: secret.slice(0, SECRET_PREFIX_LENGTH),
    url: `${publicBaseUrl}/hooks/${triggerId}/${secret}`,
  };
}

/** Mints a secret for every webhook trigger that `isNew` and puts its display prefix on the trigger. */
export function mintSecretsForNewWebhooks(
  triggers: Trigger[],
  isNew: (triggerId: string) => boolean,
  publicBaseUrl: string,
): { triggers: Trigger[]; secrets: WebhookSecret[] } {
  const secrets: WebhookSecret[] = [];
  const result = triggers.map((t) => {
    if (t.kind !== 'webhook' || !isNew(t.id)) return t;
    const secret = mintWebhookSecret(t.id, publicBaseUrl);
    secrets.push(secret);
    return { ...t, secret_prefix: secret.prefix };
  });
  return { triggers: result, secrets };
}
