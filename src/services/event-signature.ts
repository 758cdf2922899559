// Standard Webhooks signatures of event deliveries (standardwebhooks.com, "Signature scheme"): the
// base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, keyed by the secret's bytes (the
// base64 after `whsec_`), sent as `v1,<signature>`. Computed with node's crypto, not the
// standardwebhooks package's signer: its SHA-256 is written in JavaScript, and signing took a tenth
// of a delivery's CPU (docs/benchmarks.md). test/unit/event-signature.test.ts holds every signature
// to the package's own, and the tests' receivers verify deliveries with the package.
import crypto from 'node:crypto';

const PREFIX = 'whsec_';

/** The HMAC key a `whsec_` secret names. */
export function signingKeyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** The `v1,…` signature of a message `id` sent at `at` with `body`. */
export function signatureOf(key: Buffer, id: string, at: Date, body: string): string {
  const mac = crypto
    .createHmac('sha256', key)
    .update(`${id}.${Math.floor(at.getTime() / 1000)}.`)
    .update(body)
    .digest('base64');
  return `v1,${mac}`;
}
