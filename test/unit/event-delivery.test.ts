// How an attempt's answer decides what a delivery does next (domain/event-delivery.ts), and the
// address rule a URL meets when an event endpoint is written (apps/outbound/address-check.ts).
import { addressRefusal } from '../../src/apps/outbound/address-check';
import { attemptOutcome, retryAfterMs, retryDelayMs, type AttemptResult } from '../../src/domain/event-delivery';
import { DEFAULT_RETRY_SCHEDULE_SECONDS } from '../../src/event-config';

const schedule = DEFAULT_RETRY_SCHEDULE_SECONDS.map((s) => s * 1000);
const answered = (statusCode: number | null, extra: Partial<AttemptResult> = {}): AttemptResult => ({
  statusCode,
  error: statusCode === null ? 'connect ECONNREFUSED' : null,
  retryAfter: null,
  latencyMs: 12,
  responsePrefix: null,
  ...extra,
});
const NOW = Date.parse('2026-11-27T10:00:00Z');
const outcome = (result: AttemptResult, attempt = 1, opts: { manual?: boolean; random?: number } = {}) =>
  attemptOutcome(result, { attempt, manual: opts.manual ?? false, scheduleMs: schedule, nowMs: NOW, random: opts.random ?? 0.5 });

test('the schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, each within ±20 %; then none', () => {
  expect(schedule.map((_, i) => retryDelayMs(schedule, i + 1, 0.5))).toEqual([5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
  expect(retryDelayMs(schedule, 1, 0)).toBe(4000);
  expect(retryDelayMs(schedule, 1, 1)).toBe(6000);
  expect(retryDelayMs(schedule, 8, 0.5)).toBeNull();
});

test('a 2xx delivered it; redirects and errors are failures that are retried; the last failure is final', () => {
  expect(outcome(answered(204)).kind).toBe('succeeded');
  const redirect = outcome(answered(302));
  expect(redirect).toMatchObject({
    kind: 'retry',
    retryAtMs: NOW + 5000,
    attempt: { status_code: 302, error: 'the receiver answered 302 (redirects are not followed)' },
  });
  expect(outcome(answered(null))).toMatchObject({ kind: 'retry', attempt: { status_code: null, error: 'connect ECONNREFUSED', latency_ms: 12 } });
  expect(outcome(answered(500), 8)).toEqual({ kind: 'failed', disableReason: null, attempt: expect.objectContaining({ status_code: 500 }) });
  expect(outcome(answered(500), 1, { manual: true }).kind).toBe('failed');
});

test('410 fails the delivery and disables the endpoint at once', () => {
  expect(outcome(answered(410))).toMatchObject({ kind: 'failed', disableReason: expect.stringContaining('410') });
});

test("a 429's or 503's Retry-After is honoured between the scheduled delay and twice it; others' is not", () => {
  expect(outcome(answered(503, { retryAfter: '7' }))).toMatchObject({ retryAtMs: NOW + 7000 });
  expect(outcome(answered(429, { retryAfter: '3600' }))).toMatchObject({ retryAtMs: NOW + 10_000 });
  expect(outcome(answered(429, { retryAfter: '1' }))).toMatchObject({ retryAtMs: NOW + 5000 });
  expect(outcome(answered(500, { retryAfter: '7' }))).toMatchObject({ retryAtMs: NOW + 5000 });
  expect(retryAfterMs('Fri, 27 Nov 2026 10:00:08 GMT', NOW)).toBe(8000);
  expect(retryAfterMs('soon', NOW)).toBeNull();
  expect(retryAfterMs('x'.repeat(100_000), NOW)).toBeNull();
});

describe('the address rule at write', () => {
  test('https only, no credentials, public addresses; http and private ones only when allowed', async () => {
    expect(await addressRefusal('http://example.com/x', false)).toBe('must be an https URL, not http');
    expect(await addressRefusal('https://u:p@93.184.215.14/x', false)).toBe('must not carry a user name or password');
    expect(await addressRefusal('https://127.0.0.1/x', false)).toBe('127.0.0.1 is not a public (global unicast) address');
    expect(await addressRefusal('https://[::ffff:10.0.0.1]/x', false)).toContain('is not a public (global unicast) address');
    expect(await addressRefusal('https://169.254.169.254/latest', false)).toContain('not a public');
    expect(await addressRefusal('https://localhost:8443/x', false)).toMatch(/^its host localhost resolves to (127\.0\.0\.1|::1), which is not a public/);
    expect(await addressRefusal('https://93.184.215.14/x', false)).toBeNull();
    expect(await addressRefusal('http://127.0.0.1:9/x', true)).toBeNull();
    expect(await addressRefusal('ftp://127.0.0.1/x', true)).toBe('must be an https URL, not ftp (http is allowed too here)');
  });
});
