// Stripe's webhooks: `Stripe-Signature` (`t=…,v1=…`, several `v1` while a secret is rolled), the
// event's `type` and its `id` (the same on every retry). https://docs.stripe.com/webhooks#verify-manually
import type { AppModule } from '../types';
import { eventsSentAs, jsonObjectOf, textMember } from './delivery-body';
import { verifyStripe } from './signatures';

export const stripeApp: AppModule = {
  slug: 'stripe',
  name: 'Stripe',
  description: "Stripe's webhook events: a connection holds the endpoint's signing secret (whsec_…) and gives the endpoint URL.",
  tools: [],
  events: eventsSentAs("Stripe's Event object (`id`, `type`, `data.object`, …), as sent.", [
    ['payment_intent.succeeded', 'A payment succeeded.'],
    ['payment_intent.payment_failed', 'A payment attempt failed.'],
    ['charge.succeeded', 'A charge succeeded.'],
    ['charge.refunded', 'A charge was refunded.'],
    ['charge.dispute.created', 'A customer disputed a charge.'],
    ['checkout.session.completed', 'A Checkout session completed.'],
    ['customer.created', 'A customer was created.'],
    ['customer.subscription.created', 'A subscription started.'],
    ['customer.subscription.updated', 'A subscription changed.'],
    ['customer.subscription.deleted', 'A subscription ended.'],
    ['invoice.paid', 'An invoice was paid.'],
    ['invoice.payment_failed', "An invoice's payment failed."],
  ]),
  receiver: {
    verify: (body, header, secrets, now) => verifyStripe(body, header('stripe-signature'), secrets, now),
    read(body, header) {
      const json = jsonObjectOf(body, header);
      if (!json) return { kind: 'malformed', reason: 'body: must be a Stripe Event, a JSON object' };
      const type = textMember(json.type, 160);
      const id = textMember(json.id);
      if (!type) return { kind: 'malformed', reason: "body.type: required, the event's type" };
      if (!id) return { kind: 'malformed', reason: "body.id: required, the event's id" };
      return { kind: 'event', event: type, deliveryId: id, payload: json };
    },
  },
};
