// Any sender that signs by the Standard Webhooks specification (OpenAI, Svix, Resend, …):
// `webhook-id` (the delivery's id), `webhook-timestamp`, `webhook-signature` (several allowed),
// and the body's `type` as the event. https://www.standardwebhooks.com/
import { ANY_EVENT } from '../../domain/catalog';
import type { AppModule } from '../types';
import { jsonObjectOf, textMember } from './delivery-body';
import { verifyStandardWebhook } from './signatures';

export const standardWebhooksApp: AppModule = {
  slug: 'standard-webhooks',
  name: 'Standard Webhooks',
  description: 'Any sender that signs by the Standard Webhooks specification: a connection holds its whsec_ secret and gives the endpoint URL.',
  tools: [],
  events: [
    {
      name: ANY_EVENT,
      description: "Any event: a trigger names the sender's `type` (`invoice.paid`), its family (`invoice`), or `*` for every one.",
      payload_schema: { type: 'object', required: ['type'], properties: { type: { type: 'string' } }, description: 'The body, as sent.' },
    },
  ],
  receiver: {
    verify: (body, header, secrets) =>
      verifyStandardWebhook(
        body,
        { 'webhook-id': header('webhook-id'), 'webhook-timestamp': header('webhook-timestamp'), 'webhook-signature': header('webhook-signature') },
        secrets,
      ),
    read(body, header) {
      const json = jsonObjectOf(body, header);
      if (!json) return { kind: 'malformed', reason: 'body: must be a JSON object with a type' };
      const type = textMember(json.type, 160);
      if (!type) return { kind: 'malformed', reason: "body.type: required, the event's type" };
      return { kind: 'event', event: type, deliveryId: header('webhook-id')!.slice(0, 200), payload: json };
    },
  },
};
