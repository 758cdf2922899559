// The email app: an agent's mailbox (docs/channels.md). Its tools are offered to an agent whose
// `email.enabled` is true; its connections receive mail a provider forwards over HTTP
// (`message/rfc822`, signed by the Standard Webhooks scheme with the connection's signing secret).
import { objectOf, type AppModule } from '../types';
import { channelTool } from './channel-tools';

/** The longest text a mail of an agent carries. */
export const EMAIL_TEXT_MAX = 20_000;
/** The most recipients `email.send` mails at once. */
export const EMAIL_SEND_RECIPIENTS_MAX = 10;

const text = { type: 'string', minLength: 1, maxLength: EMAIL_TEXT_MAX, description: 'The body, plain text.' };

export const emailApp: AppModule = {
  slug: 'email',
  name: 'Email',
  description: "The agent's mailbox: answer the mail that started the run, or write to allowed recipients.",
  channel: { kind: 'email', credentials: 'signing_secret' },
  tools: [
    channelTool(
      'email.reply',
      'Reply',
      'Replies to the sender of the mail that started this run, in its thread (Re: subject, In-Reply-To, References). The reply is queued and sent once; the answer says whether it is queued or unsent.',
      objectOf({ text }, ['text']),
    ),
    channelTool(
      'email.send',
      'Send',
      "Writes a new mail to addresses the agent's `email.allowed_recipients` allow. Queued and sent once; the answer says whether it is queued or unsent.",
      objectOf(
        {
          to: {
            type: 'array',
            minItems: 1,
            maxItems: EMAIL_SEND_RECIPIENTS_MAX,
            items: { type: 'string', minLength: 3, maxLength: 320 },
            description: 'The recipients (each allowed by email.allowed_recipients).',
          },
          subject: { type: 'string', minLength: 1, maxLength: 200 },
          text,
        },
        ['to', 'subject', 'text'],
      ),
    ),
  ],
};
