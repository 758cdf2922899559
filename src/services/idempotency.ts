// Idempotent requests (IETF draft "The Idempotency-Key HTTP Header Field"): a request with a key is
// handled once per (workspace, user, operation, key) within IDEMPOTENCY_WINDOW_MS; a repeat with the
// same fingerprint (path, query and body, as canonical JSON: RFC 8785) gets the first reply again,
// a different one is 422, and a repeat while the first is in flight is 409. Replies of 4xx are kept
// like successes (the request was decided); a failure of the service (5xx) forgets the key, so a
// retry is handled again.
//
// A request whose process dies while it is in flight keeps its key locked for IDEMPOTENCY_LOCK_MS;
// a repeat after that is handled again (the first may or may not have taken effect).
import crypto from 'node:crypto';
import canonicalize from 'canonicalize';
import { ApiError } from '../errors';
import type { IdempotencyKey, StoredReply } from '../store/port';
import type { Principal, ServiceContext } from './context';

export const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;
export const IDEMPOTENCY_LOCK_MS = 60_000;

/** The operations that take an Idempotency-Key (and what their in-flight 409 must carry to match their 409 schema). */
export const IDEMPOTENT_OPERATIONS: ReadonlyMap<string, Record<string, unknown>> = new Map([
  ['createAgent', {}],
  ['createWorkflow', {}],
  // Apps and connections are the whole workspace's: a replay is about nothing a caller may stop seeing.
  ['createApp', {}],
  ['createConnection', {}],
  // Skills are the whole workspace's too.
  ['createSkill', {}],
  ['importSkill', {}],
  ['createEvalDataset', {}],
  ['startEval', {}],
  ['testAgent', { run_id: null }],
  ['testWorkflow', { run_id: null }],
  ['cancelAgentRun', {}],
  ['cancelWorkflowRun', {}],
]);

/** What makes two requests the same request, and what a key's first request stored before the canonical form (accepted as the same). */
export interface Fingerprint {
  canonical: string;
  legacy: string;
}

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('base64url');

/**
 * What makes two requests the same request: the method, path, query and body as canonical JSON
 * (RFC 8785: members sorted, no whitespace), so a retry whose members come in another order is the
 * same request. (A number JSON cannot hold, such as 1e400 parsed as Infinity, has no canonical
 * form: such a body is compared as JSON.stringify writes it.) `legacy`: the fingerprint keys stored
 * before, in the order the members came, matched for a retry of a request sent before an upgrade.
 */
export function fingerprintOf(method: string, path: string, query: unknown, body: unknown): Fingerprint {
  const request = [method, path, query, body ?? null];
  const legacy = sha256(JSON.stringify(request));
  const canonical = canonicalOrNull(request);
  return { canonical: canonical === null ? legacy : sha256(canonical), legacy };
}

/** RFC 8785's form of `value`, or null when it has none (a non-finite number). */
function canonicalOrNull(value: unknown): string | null {
  try {
    return canonicalize(value) ?? null;
  } catch {
    return null;
  }
}

/**
 * Answers a request with an Idempotency-Key: handled by `handle` when the key is new (its reply
 * stored), or the stored reply of the first request with this key.
 */
export async function idempotently(
  ctx: ServiceContext,
  who: Principal,
  operation: string,
  key: string,
  { canonical: fingerprint, legacy }: Fingerprint,
  handle: () => Promise<StoredReply>,
  /** Throws (404) when what the kept reply is about has since gone out of the caller's sight (a space they left). */
  stillVisible: (reply: StoredReply) => Promise<void> = async () => undefined,
): Promise<StoredReply> {
  const id: IdempotencyKey = { workspaceId: who.workspaceId, userId: who.userId, operation, key };
  const nowMs = Date.now();
  const begun = await ctx.store.idempotency.begin(
    id,
    fingerprint,
    new Date(nowMs).toISOString(),
    new Date(nowMs + IDEMPOTENCY_LOCK_MS).toISOString(),
    new Date(nowMs - IDEMPOTENCY_WINDOW_MS).toISOString(),
  );
  if (begun.outcome === 'held') {
    if (begun.fingerprint !== fingerprint && begun.fingerprint !== legacy) {
      throw new ApiError(422, 'Idempotency-Key: this key was used within 24 hours for a different request (another body or path); use a new key');
    }
    if (!begun.reply) {
      throw new ApiError(
        409,
        'Idempotency-Key: the first request with this key is still being handled; retry once it has been answered',
        IDEMPOTENT_OPERATIONS.get(operation),
      );
    }
    await stillVisible(begun.reply);
    return begun.reply;
  }
  let reply: StoredReply;
  try {
    reply = await handle();
  } catch (err) {
    if (!(err instanceof ApiError) || err.status >= 500) {
      await ctx.store.idempotency.release(id, fingerprint).catch(() => undefined);
      throw err;
    }
    reply = { status: err.status, headers: err.headers, body: err.encoded().toString('utf8') };
  }
  await ctx.store.idempotency.complete(id, fingerprint, withoutOneTimeSecrets(reply));
  return reply;
}

/**
 * The reply as it is kept for repeats: without what a write shows once (a create's webhook URLs and
 * signing keys, which carry their secrets), naming instead the triggers whose URLs were shown.
 * Nothing secret is stored, and a repeat says where the URLs went rather than showing them again.
 */
export function withoutOneTimeSecrets(reply: StoredReply): StoredReply {
  if (!reply.body.includes('"webhook_urls"')) return reply;
  const body = JSON.parse(reply.body) as { data?: { webhook_urls?: { trigger_id: string }[]; webhook_urls_withheld?: string[] } };
  if (!body.data?.webhook_urls) return reply;
  const { webhook_urls: shown, ...rest } = body.data;
  return { ...reply, body: JSON.stringify({ ...body, data: { ...rest, webhook_urls_withheld: shown.map((u) => u.trigger_id) } }) };
}
