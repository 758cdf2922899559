// Event endpoint operations (docs/events.md): read the validated request, call the service, shape the reply.
import { etagFor } from '../../domain/etag';
import * as events from '../../services/event-endpoints';
import { nextLink } from './next-link';
import type { Handlers } from './types';

const ifMatch = (headers: Record<string, unknown>) => headers['if-match'] as string;
const etagOf = (endpoint: { updated_at: string }) => ({ ETag: etagFor(endpoint.updated_at) });

export const eventEndpointHandlers: Pick<
  Handlers,
  | 'listEventEndpoints'
  | 'createEventEndpoint'
  | 'getEventEndpoint'
  | 'replaceEventEndpoint'
  | 'deleteEventEndpoint'
  | 'rotateEventEndpointSecret'
  | 'testEventEndpoint'
  | 'listEventDeliveries'
  | 'redeliverEvent'
> = {
  listEventEndpoints: async ({ ctx, principal }) => ({ status: 200, body: { data: await events.listEventEndpoints(ctx, principal) } }),
  createEventEndpoint: async ({ ctx, principal, body }) => {
    const endpoint = await events.createEventEndpoint(ctx, principal, body);
    return { status: 201, headers: { ...etagOf(endpoint), Location: `/api/build/event-endpoints/${endpoint.id}` }, body: { data: endpoint } };
  },
  getEventEndpoint: async ({ ctx, principal, params }) => {
    const endpoint = await events.getEventEndpoint(ctx, principal, params.endpointId);
    return { status: 200, headers: etagOf(endpoint), body: { data: endpoint } };
  },
  replaceEventEndpoint: async ({ ctx, principal, params, headers, body }) => {
    const endpoint = await events.replaceEventEndpoint(ctx, principal, params.endpointId, ifMatch(headers), body);
    return { status: 200, headers: etagOf(endpoint), body: { data: endpoint } };
  },
  deleteEventEndpoint: async ({ ctx, principal, params, headers }) => {
    await events.deleteEventEndpoint(ctx, principal, params.endpointId, ifMatch(headers));
    return { status: 204, noContent: true };
  },
  rotateEventEndpointSecret: async ({ ctx, principal, params, body }) => {
    const endpoint = await events.rotateEventEndpointSecret(ctx, principal, params.endpointId, body);
    return { status: 200, headers: etagOf(endpoint), body: { data: endpoint } };
  },
  testEventEndpoint: async ({ ctx, principal, params }) => ({
    status: 202,
    body: { data: await events.testEventEndpoint(ctx, principal, params.endpointId) },
  }),
  listEventDeliveries: async ({ ctx, principal, params, query }) => {
    const page = await events.listEventDeliveries(ctx, principal, params.endpointId, query);
    return { status: 200, headers: nextLink(`/api/build/event-endpoints/${params.endpointId}/deliveries`, query, page.nextCursor), rawBody: page.json };
  },
  redeliverEvent: async ({ ctx, principal, params }) => ({
    status: 202,
    body: { data: await events.redeliverEvent(ctx, principal, params.endpointId, params.deliveryId) },
  }),
};
