// Webhook secrets: 32 random bytes, shown once inside the trigger's URL, stored only as a SHA-256
// hash next to a short display prefix; a signing trigger's key is stored sealed (secret-box.ts).
// Nothing here logs or returns a secret twice.
import crypto from 'node:crypto';
import { SECRET_PREFIX_LENGTH } from '../domain/agent';
import type { Trigger } from '../domain/types';
import type { Store } from '../store/port';
import { resealAll } from './reseal';
import type { SecretBox } from './secret-box';

export interface WebhookSecret {
  triggerId: string;
  hash: string;
  prefix: string;
  /** The one-time URL; it carries the secret, so it goes into one response and nowhere else. */
  url: string;
  /** A signing trigger's Standard Webhooks key (`whsec_` and 32 random bytes in base64), shown once too. */
  signingSecret: string | null;
}

export function hashSecret(secret: string): string {
  return crypto.createHash('sha256').update(secret).digest('hex');
}

/** A new URL secret for the trigger, and a new signing key when it signs (`signed`). */
export function mintWebhookSecret(triggerId: string, publicBaseUrl: string, signed: boolean): WebhookSecret {
  const secret = `whk_${crypto.randomBytes(32).toString('base64url')}`;
  return {
    triggerId,
    hash: hashSecret(secret),
    prefix: secret.slice(0, SECRET_PREFIX_LENGTH),
    url: `${publicBaseUrl}/hooks/${triggerId}/${secret}`,
    signingSecret: signed ? `whsec_${crypto.randomBytes(32).toString('base64')}` : null,
  };
}

type WebhookTrigger = Extract<Trigger, { kind: 'webhook' }>;

/**
 * Mints secrets for every webhook trigger that `needsSecrets` (a new one, or one that starts
 * signing: its URL and signing key are minted together, both shown once) and puts the URL secret's
 * display prefix on the trigger.
 */
export function mintSecretsForWebhooks(
  triggers: Trigger[],
  needsSecrets: (trigger: WebhookTrigger) => boolean,
  publicBaseUrl: string,
): { triggers: Trigger[]; secrets: WebhookSecret[] } {
  const secrets: WebhookSecret[] = [];
  const result = triggers.map((t) => {
    if (t.kind !== 'webhook' || !needsSecrets(t)) return t;
    const secret = mintWebhookSecret(t.id, publicBaseUrl, t.signing === 'standard-webhooks');
    secrets.push(secret);
    return { ...t, secret_prefix: secret.prefix };
  });
  return { triggers: result, secrets };
}

/**
 * Seals every stored signing key that is not sealed with the current key: those stored before
 * keys were sealed, and those sealed with a key SECRETS_KEY now lists after a new one (rotation).
 * Each is one conditional write, so replicas starting together do it once. How many it sealed.
 */
export function resealSigningSecrets(store: Store, box: SecretBox): Promise<number> {
  return resealAll(
    {
      page: (after: string | null, limit) => store.webhooks.signingSecrets(after ?? '', limit),
      positionOf: (row) => row.triggerId,
      valuesOf: ({ triggerId, signingSecret }) => [
        { sealed: signingSecret, context: triggerId, replace: (from, to) => store.webhooks.replaceSigningSecret(triggerId, from, to) },
      ],
    },
    box,
  );
}
