// A workspace's event endpoints (issue 49, docs/events.md): where its events are POSTed, signed with
// the endpoint's secret (Standard Webhooks). The secret is shown once (create, rotate), sealed at
// rest, opened only to sign an attempt. The URL is held to the outbound address rule when written
// (and the sender holds it again at every connection). Endpoints are the whole workspace's; each
// receives the events of the spaces its last writer saw (domain/spaces.ts).
import crypto from 'node:crypto';
import type { components } from '../../generated/api';
import { addressRefusal } from '../apps/outbound/address-check';
import { eventGrant } from '../domain/spaces';
import { formatStamp } from '../domain/stamps';
import { badRequest, conflict, notFound } from '../errors';
import { uuidV7 } from '../ids';
import type { EventDeliveryRecord, EventDeliveryStatus, EventEndpointRecord, EventEndpointRepository } from '../store/port';
import { assertStampCurrent } from './concurrency';
import type { Principal, ServiceContext } from './context';
import { DEFAULT_PAGE, decodeCursor, type Page, pageOf } from './pages';
import { resealAll } from './reseal';
import type { SecretBox } from './secret-box';

export type EventEndpointView = components['schemas']['EventEndpoint'];
export type EventEndpointWithSecret = components['schemas']['EventEndpointWithSecret'];
export type EventDeliveryView = components['schemas']['EventDelivery'];
type EndpointWrite = components['schemas']['EventEndpointWrite'];
type Rotation = components['schemas']['EventEndpointRotation'];

/** How long a rotated secret keeps signing unless the rotation says. */
export const PREVIOUS_SECRET_SECONDS = 86_400;

export type EventContext = Pick<ServiceContext, 'store' | 'secrets' | 'events'>;

/** The sealed secret's associated data: a secret copied onto another endpoint does not open. */
export const endpointSecretContext = (workspaceId: string, endpointId: string) => `event-endpoint:${workspaceId}:${endpointId}`;

/** Seals again, with SECRETS_KEY's first key, every endpoint secret sealed with another (as service.ts does for the other sealed secrets at start); how many. */
export function resealEndpointSecrets(endpoints: EventEndpointRepository, box: SecretBox): Promise<number> {
  return resealAll(
    {
      page: (after: string | null, limit) => endpoints.sealedSecrets(after ?? '', limit),
      positionOf: (row) => row.id,
      valuesOf: (row) => {
        const context = endpointSecretContext(row.workspaceId, row.id);
        return [
          { sealed: row.secret, context, replace: (from, to) => endpoints.replaceSealed(row.id, 'secret', from, to) },
          { sealed: row.previous, context, replace: (from, to) => endpoints.replaceSealed(row.id, 'previous', from, to) },
        ];
      },
    },
    box,
  );
}

export function endpointView(e: EventEndpointRecord, nowMs = Date.now()): EventEndpointView {
  return {
    id: e.id,
    url: e.url,
    event_types: e.eventTypes as EventEndpointView['event_types'],
    description: e.description,
    status: e.status,
    disabled_reason: e.disabledReason,
    teams: e.allSpaces ? null : e.teams,
    secret_prefix: e.secretPrefix,
    previous_secret_expires_at: e.previous && e.previous.untilMs > nowMs ? new Date(e.previous.untilMs).toISOString() : null,
    created_at: e.createdAt,
    updated_at: formatStamp(e.stampMicros),
  };
}

/** A new signing secret: 24 random bytes, `whsec_` and their base64 (Standard Webhooks). */
function newSecret(): string {
  return `whsec_${crypto.randomBytes(24).toString('base64')}`;
}
const prefixOf = (secret: string) => secret.slice(0, 10);

const unknownEndpoint = (id: string) => notFound(`event endpoint '${id}' not found in this workspace; GET /api/build/event-endpoints lists them`);

async function stored(ctx: EventContext, who: Principal, id: string): Promise<EventEndpointRecord> {
  const record = await ctx.store.eventEndpoints.get(who.workspaceId, id);
  if (!record) throw unknownEndpoint(id);
  return record;
}

async function checkUrl(ctx: EventContext, url: string): Promise<void> {
  const refused = await addressRefusal(url, ctx.events.allowPrivate);
  if (refused) throw badRequest(`body.url: ${refused}`);
}

export async function listEventEndpoints(ctx: EventContext, who: Principal): Promise<EventEndpointView[]> {
  const now = Date.now();
  return (await ctx.store.eventEndpoints.list(who.workspaceId)).map((e) => endpointView(e, now));
}

export async function getEventEndpoint(ctx: EventContext, who: Principal, id: string): Promise<EventEndpointView> {
  return endpointView(await stored(ctx, who, id));
}

export async function createEventEndpoint(ctx: EventContext, who: Principal, body: EndpointWrite): Promise<EventEndpointWithSecret> {
  await checkUrl(ctx, body.url);
  const id = uuidV7();
  const secret = newSecret();
  const outcome = await ctx.store.eventEndpoints.create(
    who.workspaceId,
    {
      id,
      url: body.url,
      eventTypes: body.event_types,
      description: body.description ?? null,
      status: body.status ?? 'enabled',
      ...eventGrant(who),
      sealedSecret: ctx.secrets.seal(secret, endpointSecretContext(who.workspaceId, id)),
      secretPrefix: prefixOf(secret),
    },
    ctx.events.endpointsPerWorkspace,
  );
  if (!outcome.ok) {
    throw conflict(
      `the workspace holds ${ctx.events.endpointsPerWorkspace} event endpoints, the most it may (EVENT_ENDPOINTS_PER_WORKSPACE); delete one first`,
    );
  }
  return { ...endpointView(outcome.record), secret };
}

export async function replaceEventEndpoint(ctx: EventContext, who: Principal, id: string, ifMatch: string, body: EndpointWrite): Promise<EventEndpointView> {
  const current = await stored(ctx, who, id);
  assertStampCurrent(current.stampMicros, ifMatch, 'event endpoint');
  await checkUrl(ctx, body.url);
  const outcome = await ctx.store.eventEndpoints.replace(who.workspaceId, id, current.stampMicros, {
    url: body.url,
    eventTypes: body.event_types,
    description: body.description ?? null,
    status: body.status ?? current.status,
    ...eventGrant(who),
  });
  if (!outcome.ok) {
    if (!outcome.current) throw unknownEndpoint(id);
    throw conflict(
      `the event endpoint changed while it was being replaced (now "${formatStamp(outcome.current.stampMicros)}"); read it again and rebase your change`,
    );
  }
  return endpointView(outcome.record);
}

export async function deleteEventEndpoint(ctx: EventContext, who: Principal, id: string, ifMatch: string): Promise<void> {
  const current = await stored(ctx, who, id);
  assertStampCurrent(current.stampMicros, ifMatch, 'event endpoint');
  const removed = await ctx.store.eventEndpoints.remove(who.workspaceId, id, current.stampMicros);
  if (removed === 'missing') throw unknownEndpoint(id);
  if (removed === 'stale') throw conflict('the event endpoint changed while it was being deleted; read it again');
}

export async function rotateEventEndpointSecret(ctx: EventContext, who: Principal, id: string, body: Rotation | undefined): Promise<EventEndpointWithSecret> {
  await stored(ctx, who, id);
  const graceMs = (body?.previous_valid_for_seconds ?? PREVIOUS_SECRET_SECONDS) * 1000;
  const secret = newSecret();
  const record = await ctx.store.eventEndpoints.rotate(
    who.workspaceId,
    id,
    { sealed: ctx.secrets.seal(secret, endpointSecretContext(who.workspaceId, id)), prefix: prefixOf(secret) },
    graceMs > 0 ? Date.now() + graceMs : null,
  );
  if (!record) throw unknownEndpoint(id);
  return { ...endpointView(record), secret };
}

export async function testEventEndpoint(ctx: EventContext, who: Principal, id: string): Promise<EventDeliveryView> {
  const current = await stored(ctx, who, id);
  if (current.status !== 'enabled') throw conflict(`event endpoint '${id}' is disabled${reasonOf(current)}; enable it with a replace (status: enabled) first`);
  const deliveryId = await ctx.store.eventEndpoints.queueTest(who.workspaceId, id, Date.now());
  if (!deliveryId) throw conflict(`event endpoint '${id}' was disabled or deleted meanwhile; read it again`);
  // Read before the sender is woken: the reply shows the delivery as queued.
  const view = await deliveryOf(ctx, who, id, deliveryId);
  ctx.events.wake();
  return view;
}

const reasonOf = (e: EventEndpointRecord) => (e.disabledReason ? ` (${e.disabledReason})` : '');

export function deliveryView(d: EventDeliveryRecord): EventDeliveryView {
  return {
    id: d.id,
    endpoint_id: d.endpointId,
    event_id: d.eventId,
    event_type: d.eventType as EventDeliveryView['event_type'],
    status: d.status,
    created_at: new Date(d.createdMs).toISOString(),
    next_attempt_at: d.nextAttemptMs === null ? null : new Date(d.nextAttemptMs).toISOString(),
    attempts: d.attempts,
    event: JSON.parse(d.body) as EventDeliveryView['event'],
  };
}

async function deliveryOf(ctx: EventContext, who: Principal, endpointId: string, deliveryId: string): Promise<EventDeliveryView> {
  const record = await ctx.store.eventEndpoints.delivery(who.workspaceId, endpointId, deliveryId);
  if (!record) throw notFound(`delivery '${deliveryId}' not found for event endpoint '${endpointId}'`);
  return deliveryView(record);
}

export async function listEventDeliveries(
  ctx: EventContext,
  who: Principal,
  endpointId: string,
  query: { status?: EventDeliveryStatus; limit?: number; cursor?: string },
): Promise<Page<components['schemas']['EventDeliveryPage']>> {
  await stored(ctx, who, endpointId);
  const limit = query.limit ?? DEFAULT_PAGE;
  const before = query.cursor === undefined ? null : decodeCursor(query.cursor, (p) => (typeof p.before === 'string' ? p.before : undefined));
  const rows = await ctx.store.eventEndpoints.deliveries(who.workspaceId, endpointId, { status: query.status ?? null, before, limit: limit + 1 });
  return pageOf(
    rows,
    limit,
    (row) => JSON.stringify(deliveryView(row)),
    (last) => ({ before: last.id }),
  );
}

export async function redeliverEvent(ctx: EventContext, who: Principal, endpointId: string, deliveryId: string): Promise<EventDeliveryView> {
  const endpoint = await stored(ctx, who, endpointId);
  const outcome = await ctx.store.eventEndpoints.redeliver(who.workspaceId, endpointId, deliveryId, Date.now());
  if (outcome === 'missing') throw notFound(`delivery '${deliveryId}' not found for event endpoint '${endpointId}'`);
  if (outcome === 'disabled')
    throw conflict(`event endpoint '${endpointId}' is disabled${reasonOf(endpoint)}; enable it with a replace (status: enabled), then redeliver`);
  if (outcome === 'unfinished')
    throw conflict(`delivery '${deliveryId}' has not ended: it is pending or being delivered; a delivery is redelivered once it succeeded or failed`);
  const view = await deliveryOf(ctx, who, endpointId, deliveryId);
  ctx.events.wake();
  return view;
}
