// Meta's subscription check (GET on the webhook URL): `hub.mode=subscribe`, the verify token the
// business typed into the app's dashboard, and a challenge to echo back as the 200 body. The token
// is compared as SHA-256 digests in constant time, so neither its content nor its length shows in
// the answer's timing; the challenge is echoed only when it is short printable ASCII, so the
// answer cannot carry a sender's markup or control characters.
import crypto from 'node:crypto';

export type VerificationAnswer = { ok: true; challenge: string } | { ok: false; reason: string };

/** Meta's challenges are short numbers; anything longer than this is not one. */
export const CHALLENGE_MAX = 200;
/** A longer token is refused before it is hashed. */
const TOKEN_MAX = 4096;

const digest = (text: string) => crypto.createHash('sha256').update(text).digest();

const printableAscii = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
};

/** Whether `given` equals one of `tokens` (empty ones never match), in time independent of where they differ. */
function knownToken(given: string, tokens: readonly string[]): boolean {
  const wanted = digest(given);
  let found = false;
  // Every token is compared (no early return), so the timing does not tell which one matched.
  for (const token of tokens) if (token.length > 0 && crypto.timingSafeEqual(digest(token), wanted)) found = true;
  return found;
}

/** The answer to a subscription check: the challenge to echo (200), or why not (403). */
export function answerVerification(query: { mode?: string; token?: string; challenge?: string }, verifyTokens: readonly string[]): VerificationAnswer {
  if (query.mode !== 'subscribe') return { ok: false, reason: 'hub.mode: must be subscribe' };
  if (!verifyTokens.some((t) => t.length > 0)) return { ok: false, reason: 'hub.verify_token: no verify token is configured for this number' };
  if (typeof query.token !== 'string' || query.token.length === 0) return { ok: false, reason: 'hub.verify_token: required' };
  if (query.token.length > TOKEN_MAX || !knownToken(query.token, verifyTokens))
    return { ok: false, reason: 'hub.verify_token: does not match the verify token' };
  const challenge = query.challenge;
  if (typeof challenge !== 'string' || challenge.length === 0) return { ok: false, reason: 'hub.challenge: required' };
  if (challenge.length > CHALLENGE_MAX) return { ok: false, reason: `hub.challenge: at most ${CHALLENGE_MAX} characters` };
  if (!printableAscii(challenge)) return { ok: false, reason: 'hub.challenge: printable ASCII only' };
  return { ok: true, challenge };
}
