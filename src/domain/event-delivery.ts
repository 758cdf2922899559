// How a delivery attempt's answer decides what happens next (docs/events.md): a 2xx delivered it;
// a 410 fails it and disables the endpoint; anything else (redirects included) is retried after the
// schedule's next delay with ±20 % jitter, a 429's or 503's Retry-After honoured up to twice that
// delay, until the schedule is used up (then it failed, redeliverable). A redelivery is one attempt.

/** One attempt as the delivery's log keeps it. */
export interface DeliveryAttempt {
  at: string;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  response_prefix: string | null;
}

/** How an attempt ended: delivered, to be tried again at `retryAtMs`, or failed for good. */
export type AttemptOutcome =
  | { kind: 'succeeded'; attempt: DeliveryAttempt }
  | { kind: 'retry'; attempt: DeliveryAttempt; retryAtMs: number }
  | { kind: 'failed'; attempt: DeliveryAttempt; disableReason: string | null };

/** What came back from one attempt: the receiver's status (null: none came) and when to come back. */
export interface AttemptResult {
  statusCode: number | null;
  error: string | null;
  retryAfter: string | null;
  latencyMs: number;
  responsePrefix: string | null;
}

/** The jitter's share of a delay either way (Svix's). */
const JITTER = 0.2;

/** The delay before retry number `retry` (1-based), jittered by `random` (0..1), or null when the schedule is used up. */
export function retryDelayMs(scheduleMs: readonly number[], retry: number, random: number): number | null {
  const base = scheduleMs[retry - 1];
  if (base === undefined) return null;
  return Math.round(base * (1 - JITTER + 2 * JITTER * random));
}

/** A Retry-After value (whole seconds, or an HTTP date) as milliseconds from `nowMs`, or null when unreadable. */
export function retryAfterMs(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  if (text.length > 40) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

export const delivered = (statusCode: number | null) => statusCode !== null && statusCode >= 200 && statusCode <= 299;

/** What an attempt's log entry says. */
export function attemptRecord(result: AttemptResult, atMs: number): DeliveryAttempt {
  const error =
    result.error ??
    (delivered(result.statusCode) ? null : `the receiver answered ${result.statusCode}${redirect(result.statusCode) ? ' (redirects are not followed)' : ''}`);
  return { at: new Date(atMs).toISOString(), status_code: result.statusCode, latency_ms: result.latencyMs, error, response_prefix: result.responsePrefix };
}

const redirect = (status: number | null) => status !== null && status >= 300 && status <= 399;

/**
 * The outcome of attempt number `attempt` (1-based, counted over the delivery's life) of a delivery,
 * `manual` when it is a redelivery (one attempt, no schedule).
 */
export function attemptOutcome(
  result: AttemptResult,
  opts: { attempt: number; manual: boolean; scheduleMs: readonly number[]; nowMs: number; random: number },
): AttemptOutcome {
  const attempt = attemptRecord(result, opts.nowMs - result.latencyMs);
  if (delivered(result.statusCode)) return { kind: 'succeeded', attempt };
  if (result.statusCode === 410) return { kind: 'failed', attempt, disableReason: 'the receiver answered 410 Gone: it asked for no more deliveries' };
  const delay = opts.manual ? null : retryDelayMs(opts.scheduleMs, opts.attempt, opts.random);
  if (delay === null) return { kind: 'failed', attempt, disableReason: null };
  const asked = result.statusCode === 429 || result.statusCode === 503 ? retryAfterMs(result.retryAfter, opts.nowMs) : null;
  const wait = asked === null ? delay : Math.min(Math.max(asked, delay), 2 * delay);
  return { kind: 'retry', attempt, retryAtMs: opts.nowMs + wait };
}
