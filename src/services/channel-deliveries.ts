// The channels' receiving URLs (docs/channels.md): a connection of the `email` app receives mail a
// provider forwards over HTTP (the raw message, signed by the Standard Webhooks scheme with the
// connection's signing secret); one of the `whatsapp` app receives Meta's deliveries (signed
// `X-Hub-Signature-256` with the app secret) and answers Meta's subscription check. Both are
// found by the receiver id, as an app's events are (app-event-deliveries.ts), and refused 401
// unless signed, before anything is read.
import { eventReceiverOf } from '../apps/registry';
import { MailUnreadable } from '../channels/email/parse-mail';
import { answerVerification } from '../channels/whatsapp/verification';
import { verifyWhatsAppSignature } from '../channels/whatsapp/signature';
import { readWhatsAppDelivery, type InboundWhatsApp } from '../channels/whatsapp/webhook-payload';
import type { Credentials } from '../domain/connections';
import { ApiError } from '../errors';
import type { ConnectionRecord } from '../store/port';
import type { components } from '../../generated/api';
import { arrive, suppress, type ArrivalOutcome, type ArrivingMessage } from './channel-inbound';
import { credentialsContext } from './connection-credentials';
import type { ServiceContext } from './context';
import { receiveMail } from './email-inbound';

export type ChannelDeliveryReply = components['schemas']['ChannelDeliveryResponse'];

type Found = { workspaceId: string; record: ConnectionRecord };

/** The connection's credentials now, and a rotated set still in its grace period. */
function credentialsOf(ctx: ServiceContext, { workspaceId, record }: Found, nowMs: number): Credentials[] {
  const open = (sealed: string | null): Credentials[] =>
    sealed === null ? [] : [JSON.parse(ctx.secrets.open(sealed, credentialsContext(workspaceId, record.ref))) as Credentials];
  return [...open(record.sealedCredentials), ...(record.previous && record.previous.untilMs > nowMs ? open(record.previous.sealed) : [])];
}

const whatsappCredentials = (all: Credentials[]) => all.flatMap((c) => (c.kind === 'whatsapp' ? [c] : []));

/** Meta's subscription check of a `whatsapp` connection's URL: the challenge, or 403. */
export async function verifyChannelReceiver(
  ctx: ServiceContext,
  receiverId: string,
  query: { mode?: string; token?: string; challenge?: string },
): Promise<string> {
  const found = await ctx.store.connections.byReceiver(receiverId);
  if (found?.record.app !== 'whatsapp') throw new ApiError(404, 'no whatsapp connection receives at this URL');
  const answer = answerVerification(
    query,
    whatsappCredentials(credentialsOf(ctx, found, Date.now())).map((c) => c.verify_token),
  );
  if (!answer.ok) throw new ApiError(403, answer.reason);
  return answer.challenge;
}

/** A delivery to a channel connection's URL, verified, then handed to its channel. */
export async function deliverToChannel(
  ctx: ServiceContext,
  found: Found,
  delivery: { headers: (name: string) => string | undefined; body: Buffer },
  nowMs: number,
): Promise<ChannelDeliveryReply> {
  const credentials = credentialsOf(ctx, found, nowMs);
  if (found.record.app === 'email') {
    const secrets = credentials.flatMap((c) => (c.kind === 'signing_secret' ? [c.secret] : []));
    const verdict = eventReceiverOf('standard-webhooks')!.verify(delivery.body, delivery.headers, secrets, Math.floor(nowMs / 1000));
    if (!verdict.ok) throw new ApiError(401, verdict.reason);
    const messages = await receiveMail(ctx, { raw: delivery.body, mailFrom: '', recipients: [], client: null, workspaceId: found.workspaceId }).catch(
      (err: unknown) => {
        throw err instanceof MailUnreadable ? new ApiError(400, `body: ${err.message}`) : err;
      },
    );
    return { data: { channel: 'email', messages, statuses: 0 } };
  }
  const numbers = whatsappCredentials(credentials);
  const signature = verifyWhatsAppSignature(
    delivery.body,
    delivery.headers('x-hub-signature-256'),
    numbers.map((c) => c.app_secret),
  );
  if (!signature.ok) throw new ApiError(401, signature.reason);
  const read = readWhatsAppDelivery(delivery.body);
  if (!read.ok) throw new ApiError(400, read.reason);
  let statuses = 0;
  for (const status of read.statuses) {
    if (await ctx.store.channelMessages.reportStatus(found.workspaceId, 'whatsapp', status.id, status.status, status.error)) statuses++;
  }
  const messages: ArrivalOutcome[] = [];
  const answering = answeringAgents(ctx, found);
  for (const message of read.messages) {
    const answer = await answering(message.phoneNumberId);
    if (answer) messages.push(await receiveWhatsApp(ctx, found.workspaceId, answer.ref, answer.agent, message));
  }
  return { data: { channel: 'whatsapp', messages, statuses } };
}

type AgentRecord = NonNullable<Awaited<ReturnType<ServiceContext['store']['agents']['find']>>>;

/**
 * The connection whose number a message was sent to, and the agent that answers it: Meta sends the
 * messages of every number of one app to the one URL the app is configured with, so a message to
 * another number of the workspace goes to that number's connection and agent. Null: no connection
 * of the workspace has the number, or no agent with WhatsApp enabled answers it.
 */
function answeringAgents(ctx: ServiceContext, found: Found) {
  const known = new Map<string, Promise<{ ref: string; agent: AgentRecord } | null>>();
  const own = found.record.credentialsShown.phone_number_id ?? null;
  const refOf = async (phoneNumberId: string): Promise<string | null> => {
    if (phoneNumberId === own) return found.record.ref;
    for (const connection of await ctx.store.connections.list(found.workspaceId)) {
      if (connection.app !== 'whatsapp') continue;
      const record = await ctx.store.connections.get(found.workspaceId, connection.ref);
      if (record?.credentialsShown.phone_number_id === phoneNumberId) return record.ref;
    }
    return null;
  };
  const lookUp = async (phoneNumberId: string) => {
    const ref = await refOf(phoneNumberId);
    const agentId = ref && (await ctx.store.channelMessages.boundAgent(found.workspaceId, 'whatsapp', ref));
    const agent = agentId ? await ctx.store.agents.find(found.workspaceId, agentId) : null;
    return ref && agent?.document.whatsapp.enabled ? { ref, agent } : null;
  };
  return (phoneNumberId: string | null) => {
    const number = phoneNumberId ?? own ?? '';
    let answer = known.get(number);
    if (!answer) known.set(number, (answer = lookUp(number)));
    return answer;
  };
}

function receiveWhatsApp(ctx: ServiceContext, workspaceId: string, ref: string, agent: AgentRecord, message: InboundWhatsApp) {
  const arriving: ArrivingMessage = {
    channel: 'whatsapp',
    workspaceId,
    agent,
    from: message.from,
    to: [ref],
    subject: null,
    text: message.text ?? '',
    messageId: message.id,
    dedupeKey: message.id,
    input: {
      channel: 'whatsapp',
      from: message.from,
      name: message.name,
      type: message.type,
      text: message.text,
      message_id: message.id,
      timestamp: message.timestamp,
      context: message.context,
      connection: ref,
    },
    origin: { channel: 'whatsapp', from: message.from, message_id: message.id, connection: ref },
  };
  if (message.type !== 'text' || message.text === null) return suppress(ctx, arriving, `a ${message.type} message: the agent reads text messages only`);
  return arrive(ctx, arriving);
}
