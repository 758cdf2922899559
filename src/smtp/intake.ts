// The SMTP listener's side of the service (docs/channels.md): a recipient is accepted at RCPT only
// when it is an enabled agent's address (550 otherwise, before any data is sent), and a message,
// once its data is in, goes through the same pipeline as forwarded mail (services/email-inbound.ts).
// The listener itself (bounds, refusals) is src/channels/email/smtp-listener.ts.
import { MailUnreadable } from '../channels/email/parse-mail';
import { MessageRefused, startSmtpListener, type SmtpListener } from '../channels/email/smtp-listener';
import type { ChannelConfig } from '../config';
import type { Logger } from '../log';
import type { ServiceContext } from '../services/context';
import { agentsAddressed, receiveMail } from '../services/email-inbound';

/** How long an SMTP connection may stay silent (the client's wait for our reply to its data counts). */
const SOCKET_TIMEOUT_MS = 60_000;

export function startSmtpIntake(ctx: ServiceContext, config: ChannelConfig, host: string, logger: Logger): Promise<SmtpListener> {
  return startSmtpListener({
    host,
    port: config.smtpPort,
    serverName: config.emailDomain,
    maxBytes: config.maxBytes,
    maxRecipients: config.maxRecipients,
    maxClients: config.maxClients,
    socketTimeoutMs: SOCKET_TIMEOUT_MS,
    acceptsRecipient: async (address) => {
      try {
        return (await agentsAddressed(ctx, [address])).length > 0;
      } catch (err) {
        logger.error({ err }, 'an SMTP recipient could not be checked');
        return 'temporary';
      }
    },
    onMessage: async (message) => {
      const outcomes = await receiveMail(ctx, {
        raw: message.raw,
        mailFrom: message.mailFrom,
        recipients: message.recipients,
        client: { ip: message.remoteAddress, helo: message.helo },
      }).catch((err: unknown) => {
        // Unreadable: refused for good (554); anything else (a store's failure, DNS that did not answer): 451, and the sender retries.
        throw err instanceof MailUnreadable ? new MessageRefused(err.message) : err;
      });
      logger.debug({ outcomes: outcomes.map((o) => ({ agent: o.agent, status: o.status, reason: o.reason, run: o.run_id })) }, 'mail received');
    },
    onConnectionError: (err) => logger.debug({ err }, 'an SMTP connection failed'),
  });
}
