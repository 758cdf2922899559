// A mail for agents (docs/channels.md), over SMTP or forwarded by a provider over HTTP: parsed once,
// authenticated once (DMARC, or aligned DKIM or SPF for a domain without DMARC), then, for each
// agent it is addressed to, held to the loop rules and the agent's allowed_senders before it starts
// a run (channel-inbound.ts). What starts nothing is recorded with the rule that stopped it.
import crypto from 'node:crypto';
import { parseMail, type ParsedMail } from '../channels/email/parse-mail';
import { senderVerdict, type SenderVerdict } from '../channels/email/sender-verdict';
import { agentMailbox, loopReason, senderAllowed } from '../domain/mail-rules';
import type { AgentRecord } from '../store/port';
import { arrive, DEDUPE_KEY_MAX, suppress, type ArrivalOutcome, type ArrivingMessage } from './channel-inbound';
import type { ServiceContext } from './context';
import { ApiError } from '../errors';

/** A forwarded mail has no connecting client: SPF is checked for TEST-NET-1 (RFC 5737), which no sender's record names, so only DKIM can vouch for it. */
const NO_CLIENT = '192.0.2.1';
/** References a run's input lists, at most (the latest). */
const REFERENCES_KEPT = 20;

export interface MailArrival {
  raw: Buffer;
  /** The envelope's MAIL FROM ('' for a null return path); a forwarded mail's From. */
  mailFrom: string;
  /** The envelope's recipients; a forwarded mail's recipients are read from its headers. */
  recipients: string[];
  /** The connecting client (SMTP), or null for a forwarded mail. */
  client: { ip: string; helo: string } | null;
  /** A forwarded mail reaches only its connection's workspace. */
  workspaceId?: string;
}

/** The agents `recipients` name (their mailboxes at EMAIL_DOMAIN), at most SMTP_MAX_RECIPIENTS of them, each once. */
export async function agentsAddressed(ctx: ServiceContext, recipients: readonly string[], workspaceId?: string): Promise<AgentRecord[]> {
  const found = new Map<string, AgentRecord>();
  for (const recipient of recipients) {
    if (found.size >= ctx.channels.maxRecipients) break;
    const mailbox = mailboxOf(ctx, recipient);
    if (mailbox === null) continue;
    const owner = await ctx.store.channelMessages.mailboxOwner(mailbox);
    if (!owner || (workspaceId !== undefined && owner.workspaceId !== workspaceId) || found.has(owner.agentId)) continue;
    const agent = await ctx.store.agents.find(owner.workspaceId, owner.agentId);
    if (agent?.document.email.enabled) found.set(owner.agentId, agent);
  }
  return [...found.values()];
}

/** The local part of `address` when it is at EMAIL_DOMAIN, lower case; otherwise null. */
export function mailboxOf(ctx: Pick<ServiceContext, 'channels'>, address: string): string | null {
  const at = address.lastIndexOf('@');
  if (at <= 0 || address.slice(at + 1).toLowerCase() !== ctx.channels.emailDomain) return null;
  return address.slice(0, at).toLowerCase();
}

/** A mail's key: its Message-ID, or (none, or too long to be one) the hash of the id or of the whole message. */
const dedupeKeyOf = (mail: BoundedMail, raw: Buffer) =>
  mail.messageId && mail.messageId.length <= DEDUPE_KEY_MAX
    ? mail.messageId
    : `sha256:${crypto
        .createHash('sha256')
        .update(mail.fullMessageId ?? raw)
        .digest('hex')}`;

function runInput(mail: ParsedMail, verdict: SenderVerdict | null, agentAddress: string): Record<string, unknown> {
  return {
    channel: 'email',
    from: mail.from,
    to: mail.to,
    cc: mail.cc,
    agent_address: agentAddress,
    subject: mail.subject,
    text: mail.text,
    text_cut: mail.textCut,
    message_id: mail.messageId,
    in_reply_to: mail.inReplyTo,
    references: mail.references.slice(-REFERENCES_KEPT),
    thread: mail.references[0] ?? mail.inReplyTo ?? mail.messageId,
    attachments: mail.attachments.map((a) => ({ name: a.filename, type: a.contentType, size: a.size, sha256: a.sha256 })),
    attachments_not_listed: mail.attachmentsNotListed,
    authentication: verdict && { authenticated: verdict.authenticated, method: verdict.method, dmarc: verdict.dmarc, spf: verdict.spf, dkim: verdict.dkim },
  };
}

/** Longer than this, a Message-ID is not shown or matched (the dedupe key is its hash): an id is an id, not a payload. */
const MESSAGE_ID_CHARS = 250;
/** Longer than this, a From is no address (RFC 5321's limit): the mail has no sender to authenticate. */
const ADDRESS_CHARS = 320;

type BoundedMail = ParsedMail & { fullMessageId: string | null };

/** The mail with what a sender may make as long as a header allows cut to what is stored (the full id kept for its key). */
const boundedMail = (mail: ParsedMail): BoundedMail => ({
  ...mail,
  fullMessageId: mail.messageId,
  messageId: mail.messageId && mail.messageId.length <= MESSAGE_ID_CHARS ? mail.messageId : null,
  from: mail.from && mail.from.length <= ADDRESS_CHARS ? mail.from : null,
  references: mail.references.filter((id) => id.length <= MESSAGE_ID_CHARS),
  inReplyTo: mail.inReplyTo && mail.inReplyTo.length <= MESSAGE_ID_CHARS ? mail.inReplyTo : null,
});

/** What happened to the mail for each agent it reached (none: it reached no agent's enabled mailbox). */
export async function receiveMail(ctx: ServiceContext, arrival: MailArrival): Promise<ArrivalOutcome[]> {
  const mail = boundedMail(await parseMail(arrival.raw));
  const recipients = arrival.client ? arrival.recipients : [...mail.to, ...mail.cc, ...mail.deliveredTo];
  const agents = await agentsAddressed(ctx, recipients, arrival.workspaceId);
  if (!agents.length) return [];
  const from = mail.from ?? '';
  // A forwarded mail's envelope is the provider's: its From stands for the return path.
  if (!arrival.client) arrival = { ...arrival, mailFrom: from };
  const loop =
    mailLoopReason(ctx, mail, arrival) ??
    (mail.messageId && (await ctx.store.channelMessages.sentMessageId('email', mail.messageId))
      ? 'a mail the service sent (its own Message-ID came back)'
      : null);
  // Authenticated once, and only when a rule of its own may let it through.
  const verdict = loop === null && from ? await authenticate(ctx, arrival) : null;
  // The sender's records could not be read now: nothing is decided (nor recorded); the sender retries.
  if (verdict && !verdict.authenticated && (verdict.dmarc === 'temperror' || verdict.spf === 'temperror')) {
    throw new ApiError(
      503,
      `the sender's DNS records could not be read now (DMARC ${verdict.dmarc}, SPF ${verdict.spf}); retry later`,
      {},
      { 'Retry-After': '60' },
    );
  }
  const outcomes: ArrivalOutcome[] = [];
  for (const agent of agents) {
    const address = `${agentMailbox(agent.workspaceId, agent.slug)}@${ctx.channels.emailDomain}`;
    const message: ArrivingMessage = {
      channel: 'email',
      workspaceId: agent.workspaceId,
      agent,
      from: from || arrival.mailFrom || '(none)',
      to: [address],
      subject: mail.subject,
      text: mail.text,
      messageId: mail.messageId,
      dedupeKey: dedupeKeyOf(mail, arrival.raw),
      input: runInput(mail, verdict, address),
      origin: {
        channel: 'email',
        from,
        subject: mail.subject,
        message_id: mail.messageId,
        references: mail.references.slice(-REFERENCES_KEPT),
        agent_address: address,
      },
    };
    outcomes.push(await decide(ctx, message, agent, loop, verdict));
  }
  return outcomes;
}

function decide(
  ctx: ServiceContext,
  message: ArrivingMessage,
  agent: AgentRecord,
  loop: string | null,
  verdict: SenderVerdict | null,
): Promise<ArrivalOutcome> {
  if (loop !== null) return suppress(ctx, message, loop);
  // Kept apart from the key an authenticated copy of the Message-ID would have: a forgery cannot take a real mail's place.
  if (!verdict?.authenticated) return suppress(ctx, { ...message, dedupeKey: `unauthenticated:${message.dedupeKey}` }, unauthenticated(verdict));
  if (!senderAllowed(message.from, agent.document.email.allowed_senders ?? [])) {
    return suppress(ctx, message, `sender '${message.from}' is not in the agent's email.allowed_senders`);
  }
  return arrive(ctx, message);
}

const unauthenticated = (verdict: SenderVerdict | null) =>
  verdict === null
    ? 'the mail has no single From address to authenticate'
    : `the sender is not authenticated: DMARC ${verdict.dmarc}, SPF ${verdict.spf}, DKIM ${verdict.dkim} (a run needs DMARC pass, or, with no DMARC record, aligned DKIM or SPF)`;

function mailLoopReason(ctx: ServiceContext, mail: ParsedMail, arrival: MailArrival): string | null {
  const from = (mail.from ?? '').toLowerCase();
  const ownDomain = from.endsWith(`@${ctx.channels.emailDomain}`);
  return (
    loopReason(
      { returnPath: arrival.mailFrom, from, headers: { autoSubmitted: mail.autoSubmitted, listId: mail.listId, precedence: mail.precedence } },
      { addresses: new Set() },
    ) ?? (ownDomain ? `from the agents' own domain (${ctx.channels.emailDomain}): an agent's mail` : null)
  );
}

function authenticate(ctx: ServiceContext, arrival: MailArrival): Promise<SenderVerdict> {
  const client = arrival.client ?? { ip: NO_CLIENT, helo: '' };
  return senderVerdict(arrival.raw, { ip: client.ip, helo: client.helo, mailFrom: arrival.mailFrom, mta: ctx.channels.mtaName }, ctx.channels.mailResolver);
}
