// One attempt of an event delivery (docs/events.md): a POST of the event's body exactly as stored,
// signed for this attempt by the Standard Webhooks scheme (the event's id, a fresh timestamp, one
// signature per secret that signs now: the current one and, during a rotation's grace, the previous
// one), held to the outbound address rule at every new connection, no redirect followed, within the
// timeout, and only the response's first bytes kept.
import http from 'node:http';
import https from 'node:https';
import { Webhook } from 'standardwebhooks';
import { refusedLiteral, vettedLookup } from '../apps/outbound/lookup';
import type { AttemptResult } from '../domain/event-delivery';
import type { Logger } from '../log';
import type { ClaimedDelivery } from '../store/port';
import { endpointSecretContext } from './event-endpoints';
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

export function eventPoster(opts: EventPosterOptions) {
  const lookup = vettedLookup(opts.allowPrivate);
  // Connections kept alive between attempts to one receiver; a new one is vetted by the lookup.
  const agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: opts.perEndpoint, lookup }),
    https: new https.Agent({ keepAlive: true, maxSockets: opts.perEndpoint, lookup }),
  };

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
    const secure = url.protocol === 'https:';
    return new Promise<AttemptResult>((resolve) => {
      // A timer, not an AbortSignal: a signal per request costs the sender a tenth of a delivery's CPU.
      const deadline = setTimeout(() => request.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)), opts.timeoutMs);
      const settle = (result: AttemptResult) => {
        clearTimeout(deadline);
        resolve(result);
      };
      const request = (secure ? https : http).request(
        url,
        {
          method: 'POST',
          agent: secure ? agents.https : agents.http,
          headers: {
            'content-type': 'application/json',
            'user-agent': 'build-api-events/1',
            'webhook-id': row.eventId,
            'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
            'webhook-signature': signature,
          },
        },
        (res) => {
          const kept: Buffer[] = [];
          let seen = 0;
          res.on('data', (chunk: Buffer) => {
            if (seen < RESPONSE_PREFIX_BYTES) kept.push(chunk.subarray(0, RESPONSE_PREFIX_BYTES - seen));
            seen += chunk.length;
            if (seen > RESPONSE_READ_BYTES) res.destroy();
          });
          const done = () =>
            settle({
              statusCode: res.statusCode ?? null,
              error: null,
              retryAfter: typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : null,
              latencyMs: Math.round(performance.now() - started),
              responsePrefix: kept.length ? Buffer.concat(kept).toString('utf8') : null,
            });
          res.on('end', done);
          res.on('close', done);
        },
      );
      request.on('error', (err: Error) => settle(failed(err.message)));
      request.end(row.body);
    });
  }

  return {
    post,
    close: () => {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/** The signers of the secrets opened lately, by sealed value: opening and decoding one per attempt cost more than the signature. */
const signers = new Map<string, Webhook>();
const SIGNERS_KEPT = 1000;

function signerOf(box: SecretBox, sealed: string, context: string): Webhook {
  const key = `${context}\n${sealed}`;
  let signer = signers.get(key);
  if (!signer) {
    if (signers.size >= SIGNERS_KEPT) signers.clear();
    signer = new Webhook(box.open(sealed, context));
    signers.set(key, signer);
  }
  return signer;
}

/** The signature header at `at`: the current secret's signature, and the previous one's while it still signs. */
function signatureHeader(box: SecretBox, row: ClaimedDelivery, at: Date): string {
  const context = endpointSecretContext(row.workspaceId, row.endpointId);
  const secrets = [row.sealedSecret, ...(row.previous && row.previous.untilMs > at.getTime() ? [row.previous.sealed] : [])];
  return secrets.map((sealed) => signerOf(box, sealed, context).sign(row.eventId, at, row.body)).join(' ');
}
