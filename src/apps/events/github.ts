// GitHub's webhooks: `X-Hub-Signature-256` over the raw body, the event in `X-GitHub-Event` and
// the body's `action` (`pull_request.opened`), the delivery's id in `X-GitHub-Delivery` (the same on
// a redelivery). https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
import type { AppModule } from '../types';
import { eventsSentAs, jsonObjectOf, textMember } from './delivery-body';
import { verifyGithub } from './signatures';

export const githubApp: AppModule = {
  slug: 'github',
  name: 'GitHub',
  description: "GitHub's webhooks: a connection holds the webhook's secret and gives the URL to set as its Payload URL.",
  tools: [],
  events: eventsSentAs("GitHub's webhook payload for the event, as sent (repository, sender, and the event's object).", [
    ['push', 'Commits were pushed to a branch or a tag.'],
    ['pull_request.opened', 'A pull request was opened.'],
    ['pull_request.reopened', 'A pull request was reopened.'],
    ['pull_request.closed', 'A pull request was closed or merged (`pull_request.merged` in the payload).'],
    ['pull_request.synchronize', "A pull request's head branch was updated."],
    ['pull_request.edited', "A pull request's title or body was edited."],
    ['pull_request.ready_for_review', 'A draft pull request was marked ready for review.'],
    ['pull_request_review.submitted', 'A review of a pull request was submitted.'],
    ['issues.opened', 'An issue was opened.'],
    ['issues.closed', 'An issue was closed.'],
    ['issues.labeled', 'A label was added to an issue.'],
    ['issue_comment.created', 'A comment was added to an issue or a pull request.'],
    ['release.published', 'A release was published.'],
    ['workflow_run.completed', 'A GitHub Actions workflow run completed.'],
    ['check_suite.completed', 'A check suite completed.'],
  ]),
  receiver: {
    verify: (body, header, secrets) => verifyGithub(body, header('x-hub-signature-256'), secrets),
    read(body, header) {
      const name = textMember(header('x-github-event'), 100);
      const deliveryId = textMember(header('x-github-delivery'));
      if (!name) return { kind: 'malformed', reason: 'X-GitHub-Event: required, the name of the event' };
      if (name === 'ping') return { kind: 'notice', what: 'ping' };
      if (!deliveryId) return { kind: 'malformed', reason: "X-GitHub-Delivery: required, the delivery's id" };
      const json = jsonObjectOf(body, header);
      if (!json) return { kind: 'malformed', reason: 'body: must be a JSON object (or a form with the JSON in payload)' };
      const action = textMember(json.action, 100);
      return { kind: 'event', event: action ? `${name}.${action}` : name, deliveryId, payload: json };
    },
  },
};
