// One attempt of an event delivery (docs/events.md): a POST of the event's body exactly as stored,
// signed for this attempt by the Standard Webhooks scheme (the event's id, a fresh timestamp, one
// signature per secret that signs now: the current one and, during a rotation's grace, the previous
// one), held to the outbound address rule at every new connection, no redirect followed, within the
// timeout, and only the response's first bytes kept.
import { EventEmitter } from 'node:events';
import { Agent } from 'undici';
import { refusedLiteral, vettedLookup } from '../apps/outbound/lookup';
import type { AttemptResult } from '../domain/event-delivery';
import type { Logger } from '../log';
import type { ClaimedDelivery } from '../store/port';
import { endpointSecretContext } from './event-endpoints';
import { signatureOf, signingKeyOf } from './event-signature';
import type { SecretBox } from './secret-box';

/** The response body's bytes an attempt keeps (as UTF-8), and the most it reads before closing the connection. */
export const RESPONSE_PREFIX_BYTES = 1024;
const RESPONSE_READ_BYTES = 64 * 1024;

export interface EventPosterOptions {
  secrets: SecretBox;
  allowPrivate: boolean;
  timeoutMs: number;
  /** Connections kept to one receiver, at most. */
  perEndpoint: number;
  logger: Logger;
}

/**
 * The sender's HTTP client is undici's (the client behind node's fetch, as a package that runs on
 * Node 20): a POST and its answer cost the sender about half of what node's http.request does
 * (docs/benchmarks.md), and deliveries are most of what the sender spends. It follows no
 * redirect unless told to; each origin gets a pool of `perEndpoint` kept-alive connections, and
 * every new connection resolves its host through the outbound address rule.
 */
export function eventPoster(opts: EventPosterOptions) {
  const agent = new Agent({
    connections: opts.perEndpoint,
    connect: { lookup: vettedLookup(opts.allowPrivate), timeout: opts.timeoutMs },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
  });

  /** One POST of the delivery; never throws: what went wrong is the result's error. */
  async function post(row: ClaimedDelivery): Promise<AttemptResult> {
    const started = performance.now();
    const failed = (error: string): AttemptResult => ({
      statusCode: null,
      error,
      retryAfter: null,
      latencyMs: Math.round(performance.now() - started),
      responsePrefix: null,
    });
    let url: URL;
    try {
      url = new URL(row.url);
    } catch {
      return failed('the endpoint URL is not a URL');
    }
    const refused = refusedLiteral(url, opts.allowPrivate);
    if (refused) return failed(refused);
    // One instant for the header and the signatures: they must name the same second.
    const at = new Date();
    let signature: string;
    try {
      signature = signatureHeader(opts.secrets, row, at);
    } catch (err) {
      opts.logger.error({ err, endpoint: row.endpointId }, "an event endpoint's secret could not be opened");
      return failed("the endpoint's secret could not be opened (was SECRETS_KEY changed?); it is retried");
    }
    // The whole attempt's deadline, connection and answer included. undici takes an emitter of
    // 'abort' as a signal: an AbortController per attempt costs the sender a tenth of a delivery.
    const abort = new EventEmitter() as EventEmitter & { aborted?: boolean };
    const deadline = setTimeout(() => {
      abort.aborted = true;
      abort.emit('abort');
    }, opts.timeoutMs);
    try {
      const res = await agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        signal: abort,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'build-api-events/1',
          'webhook-id': row.eventId,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body: row.body,
      });
      const retryAfter = res.headers['retry-after'];
      const responsePrefix = await prefixOf(res.body);
      return {
        statusCode: res.statusCode,
        error: null,
        retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
        latencyMs: Math.round(performance.now() - started),
        responsePrefix,
      };
    } catch (err) {
      return failed(abort.aborted ? `no answer within ${opts.timeoutMs} ms` : (err as Error).message);
    } finally {
      clearTimeout(deadline);
    }
  }

  return { post, close: () => void agent.destroy().catch(() => {}) };
}

/** The answer's first bytes as UTF-8 (null when it has none); past RESPONSE_READ_BYTES the rest is not read. A body cut short keeps what came. */
async function prefixOf(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string | null> {
  const kept: Buffer[] = [];
  let seen = 0;
  try {
    for await (const chunk of body) {
      if (seen < RESPONSE_PREFIX_BYTES) kept.push(chunk.subarray(0, RESPONSE_PREFIX_BYTES - seen));
      seen += chunk.length;
      if (seen > RESPONSE_READ_BYTES) {
        body.destroy();
        break;
      }
    }
  } catch {
    // the deadline or the receiver ended the body early: the status stands
  }
  return kept.length ? Buffer.concat(kept).toString('utf8') : null;
}

/** The signing keys of the secrets opened lately, by sealed value: opening and decoding one per attempt cost more than the signature. */
const keys = new Map<string, Buffer>();
const KEYS_KEPT = 1000;

function keyOf(box: SecretBox, sealed: string, context: string): Buffer {
  const cacheKey = `${context}\n${sealed}`;
  let key = keys.get(cacheKey);
  if (!key) {
    if (keys.size >= KEYS_KEPT) keys.clear();
    key = signingKeyOf(box.open(sealed, context));
    keys.set(cacheKey, key);
  }
  return key;
}

/** The signature header at `at`: the current secret's signature, and the previous one's while it still signs. */
function signatureHeader(box: SecretBox, row: ClaimedDelivery, at: Date): string {
  const context = endpointSecretContext(row.workspaceId, row.endpointId);
  const secrets = [row.sealedSecret, ...(row.previous && row.previous.untilMs > at.getTime() ? [row.previous.sealed] : [])];
  return secrets.map((sealed) => signatureOf(keyOf(box, sealed, context), row.eventId, at, row.body)).join(' ');
}
