// The outbox's sender (docs/channels.md): any process claims the queued messages that are due,
// under a lease, and sends each (mail by the SMTP relay, WhatsApp by the Graph API). A send that
// fails for a while is retried with backoff; a permanent failure, or the last attempt's, is final
// and recorded. The claim is the attempt: its end is written only by the claim that made it, so
// two processes never both record one. A process that stops between the relay's acceptance and the
// record leaves the claim to lapse and the message is sent again, with the same Message-ID (mail)
// — at least once at the relay's boundary, exactly once in the outbox.
import type { OutgoingMail, Relay } from '../channels/email/relay';
import { sendWhatsAppText } from '../channels/whatsapp/graph-client';
import type { Credentials } from '../domain/connections';
import type { Logger } from '../log';
import type { ChannelMessageRow, SendOutcome } from '../store/port';
import type { WhatsAppPayload } from './channel-outbox';
import { credentialsContext } from './connection-credentials';
import type { ServiceContext } from './context';
import { periodicPass } from './periodic-pass';

/** How long a claim holds (longer than an attempt may take: the relay's and the Graph API's timeouts are 30 s). */
const CLAIM_MS = 45_000;
/** Messages claimed per pass, at most. */
const PER_PASS = 20;
/** Attempts before a temporary failure is final. */
export const SEND_ATTEMPTS = 6;

export interface ChannelSenderOptions {
  relay: Relay | null;
  graph: { baseUrl: string; version: string; timeoutMs: number };
  /** The first retry's delay; each next one doubles it (30 s by default: retries at about 30 s, 1, 2, 4 and 8 min). */
  retryBaseMs: number;
  intervalMs: number;
  logger: Logger;
}

export interface ChannelSender {
  /** Sends what is due now (the timer calls it; tests too). */
  send(): Promise<void>;
  stop(): Promise<void>;
}

type Attempt = { ok: true; messageId: string | null; note?: string | null } | { ok: false; permanent: boolean; error: string };

export function startChannelSender(ctx: ServiceContext, opts: ChannelSenderOptions): ChannelSender {
  async function sendMail(row: ChannelMessageRow): Promise<Attempt> {
    if (!opts.relay) return { ok: false, permanent: true, error: 'no SMTP relay is configured (SMTP_RELAY_URL)' };
    const sent = await opts.relay.send(JSON.parse(row.payload ?? '{}') as OutgoingMail);
    if (!sent.ok) return sent;
    // The relay took it for some recipients: sent, and the ones it refused are named.
    const refused = sent.rejected.length ? `the relay refused ${sent.rejected.join(', ')}` : null;
    return { ok: true, messageId: row.messageId, note: refused };
  }

  async function sendWhatsApp(row: ChannelMessageRow): Promise<Attempt> {
    const payload = JSON.parse(row.payload ?? '{}') as WhatsAppPayload;
    const connection = await ctx.store.connections.get(row.workspaceId, payload.connection);
    if (!connection?.sealedCredentials) return { ok: false, permanent: true, error: `connection '${payload.connection}' no longer exists` };
    const credentials = JSON.parse(ctx.secrets.open(connection.sealedCredentials, credentialsContext(row.workspaceId, payload.connection))) as Credentials;
    if (credentials.kind !== 'whatsapp') return { ok: false, permanent: true, error: `connection '${payload.connection}' holds no WhatsApp credentials` };
    const sent = await sendWhatsAppText({
      graphBaseUrl: opts.graph.baseUrl,
      version: opts.graph.version,
      phoneNumberId: credentials.phone_number_id,
      accessToken: credentials.access_token,
      to: payload.to,
      text: payload.text,
      replyTo: payload.reply_to,
      timeoutMs: opts.graph.timeoutMs,
    });
    return sent.ok ? { ok: true, messageId: sent.messageId } : { ok: false, permanent: !sent.retry, error: sent.error };
  }

  function outcomeOf(row: ChannelMessageRow, attempt: Attempt, nowMs: number): SendOutcome {
    if (attempt.ok) return { status: 'sent', sentAt: new Date(nowMs).toISOString(), messageId: attempt.messageId, note: attempt.note ?? null };
    if (attempt.permanent || row.attempts >= SEND_ATTEMPTS) return { status: 'failed', error: attempt.error };
    const delay = opts.retryBaseMs * 2 ** (row.attempts - 1);
    return { status: 'queued', error: attempt.error, nextAttemptMs: nowMs + delay };
  }

  /** Sends the claimed message, its claim renewed while the send lasts (a relay's phases may together outlast one lease). */
  async function sendOne(row: ChannelMessageRow): Promise<void> {
    const renewal = setInterval(() => {
      void ctx.store.channelMessages.renewClaim(row.id, row.attempts, Date.now() + CLAIM_MS).catch((err: unknown) => {
        opts.logger.warn({ err, message: row.id }, "a channel message's claim could not be renewed");
      });
    }, CLAIM_MS / 3);
    let attempt: Attempt;
    try {
      attempt = row.channel === 'email' ? await sendMail(row) : await sendWhatsApp(row);
    } catch (err) {
      opts.logger.error({ err, message: row.id }, 'a channel message could not be sent');
      attempt = { ok: false, permanent: false, error: 'the send failed unexpectedly; it is retried' };
    } finally {
      clearInterval(renewal);
    }
    if (!(await ctx.store.channelMessages.finishSend(row.id, row.attempts, outcomeOf(row, attempt, Date.now())))) {
      opts.logger.warn({ message: row.id }, "a channel message's claim lapsed before its send was recorded");
    }
  }

  const pass = async (): Promise<void> => {
    for (;;) {
      // Each batch's lease starts when it is claimed, not when the pass began.
      const claimedAt = Date.now();
      const claimed = await ctx.store.channelMessages.claimDue(claimedAt, claimedAt + CLAIM_MS, PER_PASS);
      await Promise.all(claimed.map(sendOne));
      if (claimed.length < PER_PASS) return;
    }
  };
  const passes = periodicPass(pass, { intervalMs: opts.intervalMs, logger: opts.logger, what: 'channel sender pass' });
  return { send: () => passes.run(), stop: passes.stop };
}
