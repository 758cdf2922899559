// Slack's Events API: the v0 signature with `X-Slack-Request-Timestamp` (5 minutes), the
// `url_verification` challenge answered, an `event_callback`'s `event.type` as the event and its
// `event_id` as the delivery's id (a retry, `X-Slack-Retry-Num`, carries the same one).
// https://api.slack.com/authentication/verifying-requests-from-slack
import type { AppModule } from '../types';
import { eventsSentAs, jsonObjectOf, textMember } from './delivery-body';
import { verifySlack } from './signatures';

export const slackApp: AppModule = {
  slug: 'slack',
  name: 'Slack',
  description: "Slack's Events API: a connection holds the app's signing secret and gives the Request URL.",
  tools: [],
  events: eventsSentAs("Slack's event_callback envelope (`team_id`, `api_app_id`, `event`, `event_id`, `event_time`), as sent.", [
    ['message', 'A message was posted in a channel or conversation the app is in.'],
    ['app_mention', 'The app was mentioned in a message.'],
    ['reaction_added', 'A reaction was added to a message.'],
    ['member_joined_channel', 'A user joined a channel.'],
    ['channel_created', 'A channel was created.'],
    ['team_join', 'A user joined the workspace.'],
  ]),
  receiver: {
    verify: (body, header, secrets, now) => verifySlack(body, header('x-slack-request-timestamp'), header('x-slack-signature'), secrets, now),
    read(body, header) {
      const json = jsonObjectOf(body, header);
      if (!json) return { kind: 'malformed', reason: 'body: must be a JSON object' };
      if (json.type === 'url_verification') {
        const challenge = textMember(json.challenge, 1000);
        return challenge ? { kind: 'answer', body: { challenge } } : { kind: 'malformed', reason: 'body.challenge: required for url_verification' };
      }
      if (json.type !== 'event_callback') return { kind: 'notice', what: typeof json.type === 'string' ? json.type.slice(0, 100) : 'unknown' };
      const inner = json.event as Record<string, unknown> | undefined;
      const type = textMember(inner?.type, 160);
      const id = textMember(json.event_id);
      if (!type) return { kind: 'malformed', reason: "body.event.type: required, the event's type" };
      if (!id) return { kind: 'malformed', reason: "body.event_id: required, the event's id" };
      return { kind: 'event', event: type, deliveryId: id, payload: json };
    },
  },
};
