// WhatsApp's 24-hour customer-service window (src/channels/whatsapp/window.ts).
import { CUSTOMER_SERVICE_WINDOW_MS, windowClosedReason, windowOpen } from '../../src/channels/whatsapp/window';

const now = Date.parse('2025-06-10T12:00:00.000Z');
const ago = (ms: number) => new Date(now - ms).toISOString();

test('the window is 24 hours', () => {
  expect(CUSTOMER_SERVICE_WINDOW_MS).toBe(86_400_000);
});

test('open while the customer wrote less than 24 hours ago, closed from 24 hours on', () => {
  expect(windowOpen(ago(0), now)).toBe(true);
  expect(windowOpen(ago(CUSTOMER_SERVICE_WINDOW_MS - 1), now)).toBe(true);
  expect(windowOpen(ago(CUSTOMER_SERVICE_WINDOW_MS), now)).toBe(false);
  expect(windowOpen(ago(3 * CUSTOMER_SERVICE_WINDOW_MS), now)).toBe(false);
});

test('a last message dated after now (a clock ahead of ours) counts as just received', () => {
  expect(windowOpen(ago(-60_000), now)).toBe(true);
});

test('never written, or an unreadable time, is a closed window', () => {
  expect(windowOpen(null, now)).toBe(false);
  expect(windowOpen('yesterday', now)).toBe(false);
  expect(windowOpen('', now)).toBe(false);
});

test('the reason says when the customer last wrote and why a free-form reply is refused', () => {
  const reason = windowClosedReason(ago(30 * 3_600_000), now);
  expect(reason).toContain('2025-06-09T06:00:00.000Z');
  expect(reason).toContain('30 hours ago');
  expect(reason).toContain('within 24 hours');
  expect(reason).toContain('template');
  expect(windowClosedReason(null, now)).toMatch(/^the customer has not written to this number yet: WhatsApp accepts a free-form reply only within 24 hours/);
  expect(windowClosedReason('garbage', now)).toMatch(/^the time the customer last wrote is unknown: /);
});
