// What an agent's channel tools send (docs/channels.md): queued in the outbox, once per tool call
// (the row's key is the run and the call, so a call the run makes again after a restart queues
// nothing new), then sent by channel-sender.ts on any replica. With no relay, mail is recorded
// `unsent` and the call's answer says so: never "sent" for what did not leave.
import { composeNew, composeReply } from '../channels/email/compose-reply';
import { windowClosedReason, windowOpen } from '../channels/whatsapp/window';
import { agentMailbox, isBareAddress, senderAllowed } from '../domain/mail-rules';
import { uuidV7 } from '../ids';
import { ToolError, type ChannelCall, type ChannelCallOutcome, type ChannelCaller } from '../apps/types';
import type { ChannelMessageRow } from '../store/port';
import { preview } from './channel-inbound';
import type { ServiceContext } from './context';

/** What a run started by a message keeps of it to answer it (email-inbound.ts, channel-deliveries.ts). */
export type ChannelOrigin =
  | { channel: 'email'; from: string; subject: string | null; message_id: string | null; references: string[]; agent_address: string }
  | { channel: 'whatsapp'; from: string; message_id: string; connection: string };

/** The mail a row sends, or the WhatsApp message: what channel-sender.ts reads back. */
export type WhatsAppPayload = { connection: string; to: string; text: string; reply_to: string | null };

const NO_RELAY = 'no SMTP relay is configured (SMTP_RELAY_URL): the mail was recorded and will not be sent';

const originOf = (caller: ChannelCaller): ChannelOrigin | null => (caller.origin ?? null) as ChannelOrigin | null;

const started = (caller: ChannelCaller, channel: 'email' | 'whatsapp', tool: string): ChannelOrigin => {
  const origin = originOf(caller);
  if (origin?.channel === channel) return origin;
  throw new ToolError(`${tool} answers the ${channel === 'email' ? 'mail' : 'WhatsApp message'} that started the run; this run was not started by one`);
};

function outboundRow(
  caller: ChannelCaller,
  call: ChannelCall,
  fields: Pick<ChannelMessageRow, 'channel' | 'from' | 'to' | 'subject' | 'messageId' | 'contact' | 'payload'> & { text: string; unsent: boolean },
): ChannelMessageRow {
  const { text, unsent, ...rest } = fields;
  return {
    ...rest,
    id: uuidV7(),
    workspaceId: caller.workspaceId,
    agentId: caller.agent.id,
    direction: 'sent',
    status: unsent ? 'unsent' : 'queued',
    reason: unsent ? NO_RELAY : null,
    preview: preview(text.slice(0, 1000)),
    dedupeKey: `${caller.runId}:${call.callId}`,
    runId: caller.runId,
    createdAt: new Date().toISOString(),
    sentAt: null,
    error: null,
    attempts: 0,
    nextAttemptMs: 0,
  };
}

function emailRow(ctx: ServiceContext, caller: ChannelCaller, call: ChannelCall): ChannelMessageRow {
  const email = caller.agent.email;
  const locale = email.locale ?? 'en';
  const text = call.args.text as string;
  const fromName = email.from_name ?? caller.agent.name;
  let mail: ReturnType<typeof composeReply>;
  if (call.tool === 'email.reply') {
    const origin = started(caller, 'email', call.tool) as Extract<ChannelOrigin, { channel: 'email' }>;
    const parent = { from: origin.from, subject: origin.subject, messageId: origin.message_id, references: origin.references };
    mail = composeReply({ from: { name: fromName, address: origin.agent_address }, parent, text, locale });
  } else {
    const to = [...new Set((call.args.to as string[]).map((address) => address.trim()))];
    const malformed = to.find((address) => !isBareAddress(address));
    if (malformed !== undefined) throw new ToolError(`email.send: '${malformed.slice(0, 100)}' is not one plain address (user@domain)`);
    const refused = to.filter((address) => !senderAllowed(address, email.allowed_recipients ?? []));
    if (refused.length)
      throw new ToolError(`email.send: ${refused.join(', ')} ${refused.length === 1 ? 'is' : 'are'} not allowed by the agent's email.allowed_recipients`);
    const address = `${agentMailbox(caller.workspaceId, caller.agent.slug)}@${ctx.channels.emailDomain}`;
    mail = composeNew({ from: { name: fromName, address }, to, subject: call.args.subject as string, text, locale });
  }
  return outboundRow(caller, call, {
    channel: 'email',
    from: mail.from.address,
    to: mail.to,
    subject: mail.subject,
    messageId: mail.messageId,
    contact: (mail.to[0] ?? '').toLowerCase(),
    payload: JSON.stringify(mail),
    text,
    unsent: !ctx.channels.relayConfigured,
  });
}

async function whatsappRow(ctx: ServiceContext, caller: ChannelCaller, call: ChannelCall): Promise<ChannelMessageRow> {
  const origin = started(caller, 'whatsapp', call.tool) as Extract<ChannelOrigin, { channel: 'whatsapp' }>;
  const last = await ctx.store.channelMessages.lastReceivedAt(caller.agent.id, 'whatsapp', origin.from);
  if (!windowOpen(last, Date.now())) throw new ToolError(`whatsapp.reply: ${windowClosedReason(last, Date.now())}`);
  const text = call.args.text as string;
  const payload: WhatsAppPayload = { connection: origin.connection, to: origin.from, text, reply_to: origin.message_id };
  return outboundRow(caller, call, {
    channel: 'whatsapp',
    from: origin.connection,
    to: [origin.from],
    subject: null,
    messageId: null,
    contact: origin.from,
    payload: JSON.stringify(payload),
    text,
    unsent: false,
  });
}

/** Queues the call's message (once per call) and answers where it stands. */
export async function queueChannelMessage(ctx: ServiceContext, caller: ChannelCaller, call: ChannelCall): Promise<ChannelCallOutcome> {
  // A call made again (its run resumed after a restart) answers what it queued then, whatever the window or the rules say now.
  const channel = call.tool === 'whatsapp.reply' ? 'whatsapp' : 'email';
  const queued = await ctx.store.channelMessages.find(caller.agent.id, channel, 'sent', `${caller.runId}:${call.callId}`);
  if (queued) return outcomeOf(queued);
  const row = call.tool === 'whatsapp.reply' ? await whatsappRow(ctx, caller, call) : emailRow(ctx, caller, call);
  const recorded = await ctx.store.channelMessages.record(row);
  return outcomeOf(recorded.recorded ? row : recorded.existing);
}

function outcomeOf(kept: ChannelMessageRow): ChannelCallOutcome {
  const status = kept.status as ChannelCallOutcome['status'];
  const note =
    status === 'unsent'
      ? (kept.reason ?? NO_RELAY)
      : status === 'queued'
        ? 'queued: it is sent once, retried on failure; GET /api/build/agents/{ref}/messages shows where it stands'
        : `${status} (queued by this call before)`;
  return { message_id: kept.id, status, to: kept.to, note };
}
