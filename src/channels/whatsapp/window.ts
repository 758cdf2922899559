// WhatsApp's customer-service window: a business may send a free-form message (text, not a
// template) only within 24 hours of the customer's last message to it. Checking it here, before
// calling Graph, spares a call that would fail with error 131047 and says why in our own words.

export const CUSTOMER_SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The rule, worded once: the refusal before sending and Graph's 131047 both end with it. */
export const WINDOW_RULE =
  "WhatsApp accepts a free-form reply only within 24 hours of the customer's last message; the customer must write again first, or the business must send an approved template message";

/** Milliseconds since the epoch of an ISO time, or null when there is none or it does not parse. */
function receivedAtMs(lastReceivedAt: string | null): number | null {
  if (lastReceivedAt === null || lastReceivedAt.length > 64) return null;
  const ms = Date.parse(lastReceivedAt);
  return Number.isFinite(ms) ? ms : null;
}

/**
 * Whether a free-form reply may be sent at `nowMs`. A last message dated after now (a clock ahead
 * of ours) counts as just received; no message, or an unreadable time, as a closed window.
 */
export function windowOpen(lastReceivedAt: string | null, nowMs: number): boolean {
  const at = receivedAtMs(lastReceivedAt);
  return at !== null && nowMs - at < CUSTOMER_SERVICE_WINDOW_MS;
}

/** Why a free-form reply is refused at `nowMs`: when the customer last wrote, and the rule. */
export function windowClosedReason(lastReceivedAt: string | null, nowMs: number): string {
  const at = receivedAtMs(lastReceivedAt);
  if (lastReceivedAt === null) return `the customer has not written to this number yet: ${WINDOW_RULE}`;
  if (at === null) return `the time the customer last wrote is unknown: ${WINDOW_RULE}`;
  const hours = Math.floor((nowMs - at) / 3_600_000);
  return `the customer last wrote at ${new Date(at).toISOString()} (${hours} hours ago), outside the 24-hour customer-service window: ${WINDOW_RULE}`;
}
