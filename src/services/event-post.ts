// One attempt of an event delivery (docs/events.md): a POST of the event's body exactly as stored,
// signed for this attempt by the Standard Webhooks scheme (the event's id, a fresh timestamp, one
// signature per secret that signs now: the current one and, during a rotation's grace, the previous
// one), held to the outbound address rule at every new connection, no redirect followed, within the
// timeout, and only the response's first bytes kept.
import { Agent, type Dispatcher } from 'undici';
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
 * Node 20), through its dispatch API: a POST and its answer cost the sender less than half of what
 * node's http.request does (docs/benchmarks.md), and deliveries are most of what the sender spends. It follows no
 * redirect unless told to; each origin gets a pool of `perEndpoint` kept-alive connections, and
 * every new connection resolves its host through the outbound address rule.
 */
export function eventPoster(opts: EventPosterOptions) {
  const agent = new Agent({
    connections: opts.perEndpoint,
    connect: { lookup: vettedLookup(opts.allowPrivate), timeout: opts.timeoutMs },
    // Off: each attempt's own deadline (PostAttempt) bounds the whole of it, answer included, and
    // undici's would arm and clear a timer at each stage of every request.
    headersTimeout: 0,
    bodyTimeout: 0,
  });

  /** One POST of the delivery; never throws: what went wrong is the result's error. */
  async function post(row: ClaimedDelivery): Promise<AttemptResult> {
    const started = performance.now();
    let url: URL;
    try {
      url = new URL(row.url);
    } catch {
      return failedAttempt(started, 'the endpoint URL is not a URL');
    }
    const refused = refusedLiteral(url, opts.allowPrivate);
    if (refused) return failedAttempt(started, refused);
    // One instant for the header and the signatures: they must name the same second.
    const at = new Date();
    let signature: string;
    try {
      signature = signatureHeader(opts.secrets, row, at);
    } catch (err) {
      opts.logger.error({ err, endpoint: row.endpointId }, "an event endpoint's secret could not be opened");
      return failedAttempt(started, "the endpoint's secret could not be opened (was SECRETS_KEY changed?); it is retried");
    }
    return new Promise((resolve) => {
      const attempt = new PostAttempt(started, opts.timeoutMs, resolve);
      try {
        agent.dispatch(
          {
            origin: url.origin,
            path: `${url.pathname}${url.search}`,
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'user-agent': 'build-api-events/1',
              'webhook-id': row.eventId,
              'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
              'webhook-signature': signature,
            },
            body: row.body,
          },
          attempt,
        );
      } catch (err) {
        attempt.onResponseError(null, err as Error);
      }
    });
  }

  return { post, close: () => void agent.destroy().catch(() => {}) };
}

const failedAttempt = (started: number, error: string): AttemptResult => ({
  statusCode: null,
  error,
  retryAfter: null,
  latencyMs: Math.round(performance.now() - started),
  responsePrefix: null,
});

/**
 * One POST's handler of undici's dispatch API (the one its `request` is built on, without a
 * response stream or a promise per request: a quarter of a POST's CPU, docs/benchmarks.md). It
 * keeps the status, Retry-After and the answer's first bytes (past RESPONSE_READ_BYTES the rest is
 * not read), and settles once: at the answer's end, at an error, or at the whole attempt's deadline
 * (connection and answer included). An answer cut short after its status keeps the status.
 */
class PostAttempt implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private statusCode: number | null = null;
  private retryAfter: string | null = null;
  private readonly kept: Buffer[] = [];
  private seen = 0;
  private timedOut = false;
  private settled = false;
  private readonly deadline: NodeJS.Timeout;

  constructor(
    private readonly started: number,
    private readonly timeoutMs: number,
    private readonly resolve: (result: AttemptResult) => void,
  ) {
    this.deadline = setTimeout(() => {
      this.timedOut = true;
      if (this.controller) this.controller.abort(new Error('deadline'));
      else this.settle(null);
    }, timeoutMs);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.timedOut) controller.abort(new Error('deadline'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return; // 1xx: the answer is still to come
    this.statusCode = statusCode;
    const retryAfter = headers['retry-after'];
    this.retryAfter = typeof retryAfter === 'string' ? retryAfter : null;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.seen < RESPONSE_PREFIX_BYTES) this.kept.push(chunk.subarray(0, RESPONSE_PREFIX_BYTES - this.seen));
    this.seen += chunk.length;
    if (this.seen > RESPONSE_READ_BYTES) controller.abort(new Error('read enough'));
  }

  onResponseEnd(): void {
    this.settle(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.settle(error);
  }

  private settle(error: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.deadline);
    if (this.statusCode === null) {
      this.resolve(failedAttempt(this.started, this.timedOut ? `no answer within ${this.timeoutMs} ms` : (error?.message ?? 'no answer')));
      return;
    }
    this.resolve({
      statusCode: this.statusCode,
      error: null,
      retryAfter: this.retryAfter,
      latencyMs: Math.round(performance.now() - this.started),
      responsePrefix: this.kept.length ? Buffer.concat(this.kept).toString('utf8') : null,
    });
  }
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
