// Meta signs every webhook POST with the app's secret: `X-Hub-Signature-256: sha256=<hex>`, the
// HMAC-SHA256 of the raw body. The check is on the bytes as received (a re-serialised body would
// not match), in constant time, and the header's shape is checked by its length and characters
// before anything is compared. Several secrets: during a rotation, the new one and the old one.
import crypto from 'node:crypto';

export type SignatureVerdict = { ok: true } | { ok: false; reason: string };

const PREFIX = 'sha256=';
/** 32 bytes of HMAC-SHA256, as hex. */
const HEX_DIGITS = 64;
const HEADER = 'X-Hub-Signature-256';

const isHex = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
};

/** Whether one of `appSecrets` signed `body` as `header` says. */
export function verifyWhatsAppSignature(body: Buffer, header: string | undefined, appSecrets: readonly string[]): SignatureVerdict {
  if (header === undefined || header === '') return { ok: false, reason: `${HEADER}: required (Meta signs every delivery)` };
  // The exact length first: a header of any other length is refused before it is read further.
  if (header.length !== PREFIX.length + HEX_DIGITS || !header.startsWith(PREFIX) || !isHex(header.slice(PREFIX.length)))
    return { ok: false, reason: `${HEADER}: must be sha256= followed by ${HEX_DIGITS} hex digits` };
  const secrets = appSecrets.filter((s) => s.length > 0);
  if (!secrets.length) return { ok: false, reason: `${HEADER}: no app secret is configured to check it with` };
  const given = Buffer.from(header.slice(PREFIX.length), 'hex');
  let matched = false;
  // Every secret is tried (no early return), so the timing does not tell which one matched.
  for (const secret of secrets) if (crypto.timingSafeEqual(crypto.createHmac('sha256', secret).update(body).digest(), given)) matched = true;
  return matched ? { ok: true } : { ok: false, reason: `${HEADER}: does not match the body (HMAC-SHA256 of the raw bytes with the app secret)` };
}
