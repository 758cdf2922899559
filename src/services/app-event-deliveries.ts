// The receiving URL of a connection of an app whose events arrive signed over HTTP
// (`POST /events/<receiver id>`, deliverAppEvent in openapi.yaml). Checked in this order: the
// receiver (404), the signature over the raw bytes with the connection's secret or a rotated one
// still in its grace period (401), what the delivery is (a ping or a handshake starts nothing; 400
// for a body that is not the app's); then every trigger that listens starts its run, once per
// delivery id (app-events.ts).
import { channelOf, eventReceiverOf } from '../apps/registry';
import type { HeaderOf } from '../apps/types';
import type { Credentials } from '../domain/connections';
import { ApiError } from '../errors';
import type { ConnectionRecord } from '../store/port';
import type { components } from '../../generated/api';
import { firingTrigger, fireTrigger, rateLimitError, type AppEvent, type StartedRun } from './app-events';
import { credentialsContext } from './connection-credentials';
import type { ServiceContext } from './context';
import { countedDelivery, header } from './webhook-deliveries';
import { deliverToChannel } from './channel-deliveries';

export interface EventDelivery {
  receiverId: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export type EventDeliveryReply =
  | components['schemas']['AppEventAcceptedResponse']
  | components['schemas']['SlackChallengeResponse']
  | components['schemas']['ChannelDeliveryResponse'];

const notFound = new ApiError(404, 'no connection receives events at this URL');

/** The secrets that verify the connection's deliveries now: its own, and a rotated one until its grace ends. */
function signingSecrets(ctx: ServiceContext, workspaceId: string, record: ConnectionRecord, nowMs: number): string[] {
  const context = credentialsContext(workspaceId, record.ref);
  const secretOf = (sealed: string | null): string[] => {
    if (sealed === null) return [];
    const credentials = JSON.parse(ctx.secrets.open(sealed, context)) as Credentials;
    return credentials.kind === 'signing_secret' ? [credentials.secret] : [];
  };
  return [...secretOf(record.sealedCredentials), ...(record.previous && record.previous.untilMs > nowMs ? secretOf(record.previous.sealed) : [])];
}

/** A delivery handled, its outcome counted in the metrics as the webhook receiver's are. */
export function deliverAppEvent(ctx: ServiceContext, delivery: EventDelivery, nowMs = Date.now()): Promise<EventDeliveryReply> {
  return countedDelivery(
    ctx,
    () => deliver(ctx, delivery, nowMs),
    (reply) =>
      'data' in reply && ('repeated' in reply.data ? reply.data.repeated : reply.data.messages.length > 0 && reply.data.messages.every((m) => m.repeated)),
  );
}

async function deliver(ctx: ServiceContext, delivery: EventDelivery, nowMs: number): Promise<EventDeliveryReply> {
  const found = await ctx.store.connections.byReceiver(delivery.receiverId);
  if (!found) throw notFound;
  const headerOf: HeaderOf = (name) => header(delivery.headers, name);
  if (channelOf(found.record.app)) return deliverToChannel(ctx, found, { headers: headerOf, body: delivery.body }, nowMs);
  const receiver = eventReceiverOf(found.record.app);
  if (!receiver) throw notFound;
  const { workspaceId, record } = found;
  const verdict = receiver.verify(delivery.body, headerOf, signingSecrets(ctx, workspaceId, record, nowMs), Math.floor(nowMs / 1000));
  if (!verdict.ok) throw new ApiError(401, verdict.reason);
  const read = receiver.read(delivery.body, headerOf);
  const reply = (event: string | null, deliveryId: string | null, repeated: boolean, runs: StartedRun[]) => ({
    data: { app: record.app, event, delivery_id: deliveryId, repeated, runs },
  });
  switch (read.kind) {
    case 'malformed':
      throw new ApiError(400, read.reason);
    case 'answer':
      return read.body as EventDeliveryReply;
    case 'notice':
      return reply(null, null, false, []);
  }
  const event: AppEvent = { workspaceId, app: record.app, event: read.event, deliveryId: read.deliveryId, payload: read.payload, chain: 1 };
  const runs: StartedRun[] = [];
  let repeats = 0;
  for (const listener of await ctx.store.appEvents.listeners(workspaceId, record.app, record.ref)) {
    const agent = await ctx.store.agents.find(workspaceId, listener.agentId);
    const trigger = agent && firingTrigger(agent.document, listener, event, record.ref);
    if (!agent || !trigger) continue;
    const fired = await fireTrigger(ctx, agent, trigger, event, nowMs);
    if (fired.status === 'rate_limited') {
      // The runs started so far are kept; the app's retry starts the rest (and repeats none).
      await ctx.store.appEvents.recordError(agent.id, trigger.id, rateLimitError(ctx, fired.retryAfterSeconds), new Date(nowMs).toISOString());
      const retryAfter = String(fired.retryAfterSeconds);
      throw new ApiError(
        429,
        `trigger '${trigger.name}' of agent '${agent.slug}' received ${ctx.webhookRatePerMinute} deliveries this minute, its limit; retry after ${retryAfter} s`,
        {},
        { 'Retry-After': retryAfter },
      );
    }
    if (fired.status === 'repeated') repeats++;
    runs.push(fired.run);
  }
  return reply(read.event, read.deliveryId, runs.length > 0 && repeats === runs.length, runs);
}
