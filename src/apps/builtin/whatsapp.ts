// The WhatsApp app: a WhatsApp Business Cloud API number (docs/channels.md). Its connections hold
// the number's credentials and receive Meta's deliveries; its tool is offered to an agent whose
// `whatsapp.enabled` is true.
import { objectOf, type AppModule } from '../types';
import { channelTool } from './channel-tools';

/** The longest text WhatsApp carries in one message. */
export const WHATSAPP_REPLY_MAX = 4096;

export const whatsappApp: AppModule = {
  slug: 'whatsapp',
  name: 'WhatsApp',
  description: "The agent's WhatsApp number: answer the message that started the run.",
  channel: { kind: 'whatsapp', credentials: 'whatsapp' },
  tools: [
    channelTool(
      'whatsapp.reply',
      'Reply',
      'Replies to the WhatsApp message that started this run, quoting it. Refused outside the 24-hour customer-service window (the customer must write first). Queued and sent once.',
      objectOf({ text: { type: 'string', minLength: 1, maxLength: WHATSAPP_REPLY_MAX } }, ['text']),
    ),
  ],
};
