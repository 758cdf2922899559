// The event outbox's sender (docs/events.md): every process claims the deliveries that are due,
// under a lease, and makes one attempt of each: a POST of the event's body as stored, signed for
// this attempt (Standard Webhooks: the event's id, a fresh timestamp, a signature per secret that
// signs now). Attempts run beside each other up to EVENT_DELIVERY_CONCURRENCY, each endpoint's up to
// EVENT_DELIVERIES_PER_ENDPOINT: a slow or dead endpoint holds only its own few, and the claims
// serve every endpoint with deliveries due before any twice. The claim is the attempt: only it
// records the outcome, so two processes never both record one; a process that stops mid-attempt
// leaves the lease to lapse and the delivery is attempted again (at least once, with one webhook-id).
import http from 'node:http';
import https from 'node:https';
import { Webhook } from 'standardwebhooks';
import { refusedLiteral, vettedLookup } from '../apps/outbound/lookup';
import { attemptOutcome, type AttemptResult } from '../domain/event-delivery';
import type { EventConfig } from '../event-config';
import type { Logger } from '../log';
import type { ClaimedDelivery } from '../store/port';
import type { ServiceContext } from './context';
import { endpointSecretContext } from './event-endpoints';

/** The response body's bytes an attempt keeps (as UTF-8), and the most it reads before closing the connection. */
export const RESPONSE_PREFIX_BYTES = 1024;
const RESPONSE_READ_BYTES = 64 * 1024;
/** What an attempt's claim adds to its timeout: room to record the outcome before another process may take it. */
const LEASE_SLACK_MS = 5000;
/** How often ended deliveries past their retention are deleted, and how many at a time. */
const PRUNE_MS = 60_000;
const PRUNE_BATCH = 1000;

export interface EventSenderOptions {
  config: EventConfig;
  allowPrivate: boolean;
  logger: Logger;
  /** Off (0): no timer; tests call `send` themselves. */
  intervalMs: number;
  /** The retry delays' jitter (0..1); tests pin it. */
  random?: () => number;
}

export interface EventSender {
  /** Claims what is due now and starts its attempts (resolves once they are started, not ended). */
  send(): Promise<void>;
  /** Resolves when every attempt started has been recorded. */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

export function startEventSender(ctx: Pick<ServiceContext, 'store' | 'secrets'>, opts: EventSenderOptions): EventSender {
  const { config, logger } = opts;
  const random = opts.random ?? Math.random;
  const lookup = vettedLookup(opts.allowPrivate);
  // Connections kept alive between attempts to one receiver; a new one is vetted by the lookup.
  const agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: config.perEndpoint, lookup }),
    https: new https.Agent({ keepAlive: true, maxSockets: config.perEndpoint, lookup }),
  };
  const running = new Set<Promise<void>>();
  let claiming: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  let lastPruneMs = 0;

  async function attempt(row: ClaimedDelivery): Promise<void> {
    const renewal = setInterval(() => {
      void ctx.store.eventEndpoints.renewClaim(row.id, row.attempt, Date.now() + config.timeoutMs + LEASE_SLACK_MS).catch(() => undefined);
    }, config.timeoutMs);
    let result: AttemptResult;
    try {
      result = await post(row);
    } finally {
      clearInterval(renewal);
    }
    const outcome = attemptOutcome(result, { attempt: row.attempt, manual: row.manual, scheduleMs: config.retryScheduleMs, nowMs: Date.now(), random: random() });
    const recorded = await ctx.store.eventEndpoints.finishAttempt(row.id, row.attempt, outcome, Date.now(), config.disableAfterMs);
    if (!recorded) logger.warn({ delivery: row.id }, "an event delivery's claim lapsed before its attempt was recorded");
  }

  /** One POST of the delivery; never throws: what went wrong is the result's error. */
  async function post(row: ClaimedDelivery): Promise<AttemptResult> {
    const started = performance.now();
    const failed = (error: string): AttemptResult => ({ statusCode: null, error, retryAfter: null, latencyMs: Math.round(performance.now() - started), responsePrefix: null });
    let url: URL;
    try {
      url = new URL(row.url);
    } catch {
      return failed('the endpoint URL is not a URL');
    }
    const refused = refusedLiteral(url, opts.allowPrivate);
    if (refused) return failed(refused);
    let signature: string;
    try {
      signature = signatures(row);
    } catch (err) {
      logger.error({ err, endpoint: row.endpointId }, "an event endpoint's secret could not be opened");
      return failed("the endpoint's secret could not be opened (was SECRETS_KEY changed?); it is retried");
    }
    const secure = url.protocol === 'https:';
    return new Promise<AttemptResult>((resolve) => {
      const request = (secure ? https : http).request(
        url,
        {
          method: 'POST',
          agent: secure ? agents.https : agents.http,
          signal: AbortSignal.timeout(config.timeoutMs),
          headers: {
            'content-type': 'application/json',
            'user-agent': 'build-api-events/1',
            'webhook-id': row.eventId,
            'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
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
            resolve({
              statusCode: res.statusCode ?? null,
              error: null,
              retryAfter: typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : null,
              latencyMs: Math.round(performance.now() - started),
              responsePrefix: kept.length ? Buffer.concat(kept).toString('utf8') : null,
            });
          res.on('end', done);
          res.on('close', done);
          res.on('error', done);
        },
      );
      request.on('error', (err: NodeJS.ErrnoException) =>
        resolve(failed(err.name === 'AbortError' || err.name === 'TimeoutError' ? `no answer within ${config.timeoutMs} ms` : err.message)),
      );
      request.end(row.body);
    });
  }

  /** The signature header: the current secret's, and the previous one's while it still signs. */
  function signatures(row: ClaimedDelivery): string {
    const context = endpointSecretContext(row.workspaceId, row.endpointId);
    const at = new Date();
    const secrets = [row.sealedSecret, ...(row.previous && row.previous.untilMs > at.getTime() ? [row.previous.sealed] : [])];
    return secrets.map((sealed) => new Webhook(ctx.secrets.open(sealed, context)).sign(row.eventId, at, row.body)).join(' ');
  }

  function start(row: ClaimedDelivery): void {
    const work = attempt(row)
      .catch((err: unknown) => logger.error({ err, delivery: row.id }, 'an event delivery attempt failed unexpectedly'))
      .finally(() => {
        running.delete(work);
        // A slot came free: what is due may take it now, not at the next tick.
        if (!stopped) void send();
      });
    running.add(work);
  }

  async function claimOnce(): Promise<void> {
    for (;;) {
      const room = config.concurrency - running.size;
      if (room <= 0 || stopped) return;
      const now = Date.now();
      const claimed = await ctx.store.eventEndpoints.claimDue(now, now + config.timeoutMs + LEASE_SLACK_MS, room, config.perEndpoint);
      for (const row of claimed) start(row);
      if (now - lastPruneMs >= PRUNE_MS) {
        lastPruneMs = now;
        await ctx.store.eventEndpoints.prune(now - config.retentionMs, PRUNE_BATCH);
      }
      if (claimed.length < room) return;
    }
  }

  /** One claim at a time in this process; a call during one asks for another right after it. */
  function send(): Promise<void> {
    if (claiming) {
      again = true;
      return claiming;
    }
    claiming = claimOnce()
      .catch((err: unknown) => logger.error({ err }, 'claiming event deliveries failed'))
      .finally(() => {
        claiming = null;
        if (again && !stopped) {
          again = false;
          void send();
        }
      });
    return claiming;
  }

  const timer = opts.intervalMs > 0 ? setInterval(() => void send(), opts.intervalMs) : null;
  timer?.unref();
  return {
    send,
    idle: async () => {
      while (claiming || running.size) await Promise.all([claiming, ...running]);
    },
    stop: async () => {
      stopped = true;
      if (timer) clearInterval(timer);
      await claiming;
      await Promise.all(running);
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
