// The event outbox's sender (docs/events.md): every process claims the deliveries that are due,
// under a lease, and makes one attempt of each: a POST of the event's body as stored, signed for
// this attempt (Standard Webhooks: the event's id, a fresh timestamp, a signature per secret that
// signs now). Attempts run beside each other up to EVENT_DELIVERY_CONCURRENCY, each endpoint's up to
// EVENT_DELIVERIES_PER_ENDPOINT: a slow or dead endpoint holds only its own few, and the claims
// serve every endpoint with deliveries due before any twice. The claim is the attempt: only it
// records the outcome, so two processes never both record one; a process that stops mid-attempt
// leaves the lease to lapse and the delivery is attempted again (at least once, with one webhook-id).
// Ended attempts are recorded together, with the next claim (within a tick): a transaction per
// attempt was most of what a delivery cost the store (docs/benchmarks.md).
import { attemptOutcome, type AttemptOutcome } from '../domain/event-delivery';
import type { EventConfig } from '../event-config';
import type { Logger } from '../log';
import type { ClaimedDelivery } from '../store/port';
import type { ServiceContext } from './context';
import { eventPoster } from './event-post';

/** What an attempt's claim adds to its timeout: room to record the outcome before another process may take it. */
const LEASE_SLACK_MS = 5000;
/** How often ended deliveries past their retention are deleted, and how many at a time. */
const PRUNE_MS = 60_000;
const PRUNE_BATCH = 1000;
/** Without a tick (tests call `send`), how long an ended attempt waits for the others before they are recorded together. */
const RECORD_WAIT_MS = 50;

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
  stop(): Promise<void>;
}

export function startEventSender(ctx: Pick<ServiceContext, 'store' | 'secrets'>, opts: EventSenderOptions): EventSender {
  const { config, logger } = opts;
  const random = opts.random ?? Math.random;
  const poster = eventPoster({ secrets: ctx.secrets, allowPrivate: opts.allowPrivate, timeoutMs: config.timeoutMs, perEndpoint: config.perEndpoint, logger });
  const running = new Set<Promise<void>>();
  let claiming: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  let lastPruneMs = 0;
  let saturated = false;
  const refillAt = Math.ceil(config.concurrency / 4);
  // A sender with a tick records with its claims; one without (tests) after RECORD_WAIT_MS.
  const records = attemptRecords(ctx, config, logger, opts.intervalMs > 0 ? null : RECORD_WAIT_MS);

  // An attempt ends within its timeout, inside its claim's lease: the claim needs no renewal.
  async function attempt(row: ClaimedDelivery): Promise<void> {
    const result = await poster.post(row);
    const nowMs = Date.now();
    const outcome = attemptOutcome(result, {
      attempt: row.attempt,
      manual: row.manual,
      scheduleMs: config.retryScheduleMs,
      nowMs,
      random: random(),
    });
    records.add(row, outcome, nowMs);
  }

  function start(row: ClaimedDelivery): void {
    const work = attempt(row)
      .catch((err: unknown) => logger.error({ err, delivery: row.id }, 'an event delivery attempt failed unexpectedly'))
      .finally(() => {
        running.delete(work);
        // Deliveries were left waiting (the last claim filled every slot): once a quarter of the
        // slots are free they take them, without waiting for the tick. A claim per freed slot cost
        // a backlog's delivery more than its POST (docs/benchmarks.md).
        if (!stopped && saturated && config.concurrency - running.size >= refillAt) void send();
      });
    running.add(work);
  }

  async function claimOnce(): Promise<void> {
    for (;;) {
      records.flush();
      const room = config.concurrency - running.size;
      if (room <= 0 || stopped) return;
      const now = Date.now();
      const claimed = await ctx.store.eventEndpoints.claimDue(now, now + config.timeoutMs + LEASE_SLACK_MS, room, config.perEndpoint);
      saturated = claimed.length === room;
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
    stop: async () => {
      stopped = true;
      if (timer) clearInterval(timer);
      await claiming;
      await Promise.all(running);
      await records.drain();
      poster.close();
    },
  };
}

/**
 * The records of ended attempts, made together: the writes are queued in one turn, so the store
 * commits them in one transaction (and a claim queued right after joins it: it counts each
 * endpoint's attempts under way with these already ended). Without a tick, each waits `waitMs` at most.
 */
function attemptRecords(ctx: Pick<ServiceContext, 'store'>, config: EventConfig, logger: Logger, waitMs: number | null) {
  const ended: { row: ClaimedDelivery; outcome: AttemptOutcome; atMs: number }[] = [];
  let timer: NodeJS.Timeout | null = null;
  const writing = new Set<Promise<void>>();

  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = null;
    for (const { row, outcome, atMs } of ended.splice(0)) {
      const write = ctx.store.eventEndpoints
        .finishAttempt(row, outcome, atMs, config.disableAfterMs)
        .then((recorded) => {
          if (!recorded) logger.warn({ delivery: row.id }, "an event delivery's claim lapsed before its attempt was recorded");
        })
        .catch((err: unknown) => logger.error({ err, delivery: row.id }, 'recording an event delivery attempt failed'))
        .finally(() => writing.delete(write));
      writing.add(write);
    }
  }

  return {
    add(row: ClaimedDelivery, outcome: AttemptOutcome, atMs: number): void {
      ended.push({ row, outcome, atMs });
      if (waitMs !== null) timer ??= setTimeout(flush, waitMs);
    },
    /** Queues the record of every attempt ended so far. */
    flush,
    /** Records what ended and waits for every record. */
    drain: async (): Promise<void> => {
      flush();
      await Promise.all(writing);
    },
  };
}
