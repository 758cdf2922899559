// What both adapters share of event subscriptions: the columns read, the rows mapped to the port's
// records, and the writes' derived values (the subscription rows of an endpoint's types).
import { randomBytes } from 'node:crypto';
import type { ClaimedDelivery, DeliveryAttempt, EventDeliveryRecord, EventDeliveryStatus, EventEndpointRecord, EventEndpointStatus } from '../port';

export const ENDPOINT_COLUMNS =
  'id, url, event_types, description, status, disabled_reason, all_spaces, teams, secret_sealed, secret_prefix, previous_sealed, previous_until_ms, created_at, stamp_us';

export interface EndpointRow {
  id: string;
  url: string;
  event_types: string;
  description: string | null;
  status: EventEndpointStatus;
  disabled_reason: string | null;
  all_spaces: number;
  teams: string;
  secret_sealed: string;
  secret_prefix: string;
  previous_sealed: string | null;
  previous_until_ms: number | string | null;
  created_at: string;
  stamp_us: number | string;
}

export function endpointOfRow(row: EndpointRow): EventEndpointRecord {
  return {
    id: row.id,
    url: row.url,
    eventTypes: JSON.parse(row.event_types) as string[],
    description: row.description,
    status: row.status,
    disabledReason: row.disabled_reason,
    allSpaces: row.all_spaces === 1,
    teams: JSON.parse(row.teams) as string[],
    sealedSecret: row.secret_sealed,
    secretPrefix: row.secret_prefix,
    previous: row.previous_sealed !== null && row.previous_until_ms !== null ? { sealed: row.previous_sealed, untilMs: Number(row.previous_until_ms) } : null,
    createdAt: row.created_at,
    stampMicros: Number(row.stamp_us),
  };
}

export const DELIVERY_COLUMNS = 'd.id, d.endpoint_id, d.event_id, d.event_type, d.status, d.created_ms, d.next_attempt_ms, d.log, d.body';

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: EventDeliveryStatus;
  created_ms: number | string;
  next_attempt_ms: number | string | null;
  log: string;
  body: string;
}

export function deliveryOfRow(row: DeliveryRow): EventDeliveryRecord {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    createdMs: Number(row.created_ms),
    // Only a delivery waiting for an attempt has one scheduled.
    nextAttemptMs: row.status === 'pending' && row.next_attempt_ms !== null ? Number(row.next_attempt_ms) : null,
    attempts: JSON.parse(row.log) as DeliveryAttempt[],
    body: row.body,
  };
}

/** The columns a claim returns (`d` the delivery, `p` its endpoint). */
export const CLAIM_COLUMNS =
  'd.id, d.workspace_id, d.endpoint_id, d.event_id, d.attempts, d.manual, d.body, p.url, p.secret_sealed, p.previous_sealed, p.previous_until_ms';

export interface ClaimRow {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  attempts: number;
  manual: number;
  body: string;
  url: string;
  secret_sealed: string;
  previous_sealed: string | null;
  previous_until_ms: number | string | null;
}

export function claimOfRow(row: ClaimRow): ClaimedDelivery {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    attempt: row.attempts,
    manual: row.manual === 1,
    body: row.body,
    url: row.url,
    sealedSecret: row.secret_sealed,
    previous: row.previous_sealed !== null && row.previous_until_ms !== null ? { sealed: row.previous_sealed, untilMs: Number(row.previous_until_ms) } : null,
  };
}

/**
 * The most endpoints with deliveries waiting that one claim looks at (the next claim goes on from
 * where it stopped): what bounds a claim's cost, whatever the backlog and the number of endpoints.
 */
export const CLAIM_VISITS = 64;

/** The subscription rows of an endpoint: one per type it receives, none while it is disabled. */
export function subscriptionTypes(status: EventEndpointStatus, eventTypes: readonly string[]): string[] {
  return status === 'enabled' ? [...new Set(eventTypes)] : [];
}

/**
 * An event's id, the webhook-id: `evt_`, its millisecond in 12 hex digits, then 80 random bits, as
 * the migrations' triggers make them (time-ordered ids keep the outbox's writes at its indexes' ends).
 */
export function eventIdAt(nowMs: number): string {
  return `evt_${nowMs.toString(16).padStart(12, '0')}${randomBytes(10).toString('hex')}`;
}

/** The `webhook.test` event's body (numbered in the endpoint's own subject). */
export function testEventBody(endpointId: string, sequence: number, nowMs: number): string {
  return JSON.stringify({ type: 'webhook.test', timestamp: new Date(nowMs).toISOString(), data: { endpoint_id: endpointId, sequence } });
}
