// How each app that sends its events over HTTP proves a delivery is its own: a signature of the
// raw bytes with a secret the connection holds (and, during a rotation, the previous one too).
// Every check is on the bytes as received, compares in constant time, and reads its headers by
// splitting (linear in their length, no backtracking pattern over a sender's text). A verdict
// names what failed, for the receiver's log and the trigger's last_error, never the secret.
import crypto from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

export type Verdict = { ok: true } | { ok: false; reason: string };

const OK: Verdict = { ok: true };
const refused = (reason: string): Verdict => ({ ok: false, reason });

/** The longest signature header read: anything longer is refused before it is split. */
const MAX_HEADER = 4096;

/** Whether two hex (or base64) texts are equal, in time that depends on their length only. */
function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && crypto.timingSafeEqual(left, right);
}

const hmacHex = (secret: string, data: Buffer | string) => crypto.createHmac('sha256', secret).update(data).digest('hex');

/** GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`. */
export function verifyGithub(body: Buffer, header: string | undefined, secrets: readonly string[]): Verdict {
  if (!header) return refused('X-Hub-Signature-256 is missing');
  if (header.length > MAX_HEADER || !header.startsWith('sha256=')) return refused('X-Hub-Signature-256 is not sha256=<hex>');
  const given = header.slice('sha256='.length).toLowerCase();
  return secrets.some((secret) => sameText(hmacHex(secret, body), given)) ? OK : refused('X-Hub-Signature-256 does not match the body');
}

/** Stripe's default tolerance: a signed timestamp older or newer than this is refused (replays). */
export const STRIPE_TOLERANCE_SECONDS = 300;

/** Stripe: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]`, the HMAC of `<t>.<body>`. */
export function verifyStripe(
  body: Buffer,
  header: string | undefined,
  secrets: readonly string[],
  nowSeconds: number,
  tolerance = STRIPE_TOLERANCE_SECONDS,
): Verdict {
  if (!header) return refused('Stripe-Signature is missing');
  if (header.length > MAX_HEADER) return refused('Stripe-Signature is too long');
  let timestamp: string | null = null;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 't') timestamp = value;
    else if (key === 'v1') signatures.push(value.toLowerCase());
  }
  if (timestamp === null || !/^\d{1,12}$/.test(timestamp)) return refused('Stripe-Signature has no timestamp t=');
  if (!signatures.length) return refused('Stripe-Signature has no v1 signature');
  if (Math.abs(nowSeconds - Number(timestamp)) > tolerance) return refused(`Stripe-Signature's timestamp is more than ${tolerance} s from now`);
  const signed = Buffer.concat([Buffer.from(`${timestamp}.`), body]);
  const expected = secrets.map((secret) => hmacHex(secret, signed));
  return signatures.some((given) => expected.some((e) => sameText(e, given))) ? OK : refused('no v1 signature of Stripe-Signature matches the body');
}

/** Slack's window: a request whose timestamp is further from now is refused (replays). */
export const SLACK_WINDOW_SECONDS = 300;

/** Slack: `X-Slack-Signature: v0=<hex HMAC of "v0:<X-Slack-Request-Timestamp>:<body>">`. */
export function verifySlack(
  body: Buffer,
  timestampHeader: string | undefined,
  signatureHeader: string | undefined,
  secrets: readonly string[],
  nowSeconds: number,
): Verdict {
  if (!timestampHeader || !signatureHeader) return refused('X-Slack-Request-Timestamp or X-Slack-Signature is missing');
  if (!/^\d{1,12}$/.test(timestampHeader)) return refused('X-Slack-Request-Timestamp is not a number of seconds');
  if (Math.abs(nowSeconds - Number(timestampHeader)) > SLACK_WINDOW_SECONDS)
    return refused(`X-Slack-Request-Timestamp is more than ${SLACK_WINDOW_SECONDS} s from now`);
  if (signatureHeader.length > MAX_HEADER || !signatureHeader.startsWith('v0=')) return refused('X-Slack-Signature is not v0=<hex>');
  const given = signatureHeader.slice(3).toLowerCase();
  const base = Buffer.concat([Buffer.from(`v0:${timestampHeader}:`), body]);
  return secrets.some((secret) => sameText(hmacHex(secret, base), given)) ? OK : refused('X-Slack-Signature does not match the body');
}

/** Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`, several `v1,` signatures), by its own library. */
export function verifyStandardWebhook(body: Buffer, headers: Record<string, string | undefined>, secrets: readonly string[]): Verdict {
  const wanted = {
    'webhook-id': headers['webhook-id'] ?? '',
    'webhook-timestamp': headers['webhook-timestamp'] ?? '',
    'webhook-signature': headers['webhook-signature'] ?? '',
  };
  if (!wanted['webhook-id'] || !wanted['webhook-timestamp'] || !wanted['webhook-signature']) {
    return refused('webhook-id, webhook-timestamp or webhook-signature is missing');
  }
  if (wanted['webhook-signature'].length > MAX_HEADER) return refused('webhook-signature is too long');
  let reason = 'no signature of webhook-signature matches the body';
  for (const secret of secrets) {
    try {
      // Only the signature: the body may be anything (a forwarded mail is not JSON; an app's event is read after).
      new Webhook(secret).verify(body.toString('utf8'), wanted, { jsonParse: false });
      return OK;
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      reason = err.message;
    }
  }
  return refused(reason);
}
