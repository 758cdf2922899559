// The webhook receiver's use case: a delivery to `<base>/hooks/<trigger id>/<secret>` starts a run of
// the trigger's agent. Checked in this order: the URL (404 for an unknown trigger or a wrong secret,
// alike; 410 for a secret a rotation or a replace retired), the agent's and trigger's state (409),
// the signature of a signing trigger (401), a repeated delivery id (the first reply again); then,
// in one write with the delivery's row and its count against the trigger's rate (429 past it), the
// run is queued or refused.
import crypto from 'node:crypto';
import querystring from 'node:querystring';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { parseExactJsonWithin } from '../domain/json-exact';
import { NOT_JSON } from '../domain/json-limits';
import type { Agent, Trigger } from '../domain/types';
import { ApiError } from '../errors';
import { agentRun } from './run-builders';
import { hashSecret } from './webhooks';
import type { ServiceContext } from './context';
import { acceptRun, refusalMessage, refused } from './runs';

/** How long a delivery id is remembered: a repeat within it starts nothing. */
export const REPEAT_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The request headers a run receives (the rest stay out of the run, and out of its transcript). */
const FORWARDED_HEADERS = ['content-type', 'user-agent', 'webhook-id'] as const;

export interface Delivery {
  triggerId: string;
  secret: string;
  headers: Record<string, string | string[] | undefined>;
  /** The raw query string, without `?`. */
  query: string;
  body: Buffer;
}

export interface DeliveryAccepted {
  runId: string;
  status: string;
  /** The delivery was received before: this is the first one's reply. */
  repeated?: true;
}

/** What a run started by a delivery gets: the body (parsed JSON, a form as an object, else text), some headers and the query. */
export interface DeliveryInput {
  body: unknown;
  headers: Partial<Record<(typeof FORWARDED_HEADERS)[number], string>>;
  query: Record<string, unknown>;
}

const notFound = new ApiError(404, 'no webhook at this URL');
// A hash no secret has: an unknown trigger is compared against it, so it takes as long as a wrong secret.
const NO_HASH = '0'.repeat(64);

function sameHash(presented: string, stored: string | null): boolean {
  return crypto.timingSafeEqual(Buffer.from(presented), Buffer.from(stored ?? NO_HASH)) && stored !== null;
}

/** A request header by its lower-case name (the first, when repeated). */
export const header = (headers: Delivery['headers'], name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

export function deliveryInput(delivery: Delivery): DeliveryInput {
  const type = (header(delivery.headers, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  const text = delivery.body.toString('utf8');
  let body: unknown = delivery.body.length ? text : null;
  if (delivery.body.length && (type === 'application/json' || type.endsWith('+json'))) {
    // Not JSON after all, deeper than any API body may be, or JSON that parsing would change (a
    // repeated member, a number no double holds): the run gets the text, as sent.
    const parsed = parseExactJsonWithin(text);
    if (parsed !== NOT_JSON) body = parsed;
  } else if (type === 'application/x-www-form-urlencoded') {
    body = { ...querystring.parse(text) };
  }
  const headers: DeliveryInput['headers'] = {};
  for (const name of FORWARDED_HEADERS) {
    const value = header(delivery.headers, name);
    if (value !== undefined) headers[name] = value;
  }
  return { body, headers, query: { ...querystring.parse(delivery.query) } };
}

/** The prompt of the run: the trigger's own (or a default), then the delivery as JSON. */
export function deliveryPrompt(trigger: Trigger, input: DeliveryInput): string {
  const intro = trigger.prompt ?? `A delivery arrived at the webhook trigger '${trigger.name}'.`;
  return `${intro}\n\nWebhook delivery:\n${JSON.stringify(input)}`;
}

function verifySignature(signingSecret: string | null, delivery: Delivery): void {
  const headers = {
    'webhook-id': header(delivery.headers, 'webhook-id') ?? '',
    'webhook-timestamp': header(delivery.headers, 'webhook-timestamp') ?? '',
    'webhook-signature': header(delivery.headers, 'webhook-signature') ?? '',
  };
  if (!headers['webhook-id'] || !headers['webhook-timestamp'] || !headers['webhook-signature']) {
    throw new ApiError(401, 'this trigger requires a Standard Webhooks signature: send webhook-id, webhook-timestamp and webhook-signature');
  }
  if (!signingSecret) throw new ApiError(401, 'webhook-signature: the trigger has no signing secret; rotate it to mint one');
  try {
    new Webhook(signingSecret).verify(delivery.body, headers, { jsonParse: false });
  } catch (err) {
    if (!(err instanceof WebhookVerificationError)) throw err;
    if (/timestamp/i.test(err.message) || /Invalid Signature Headers/.test(err.message)) {
      throw new ApiError(401, "webhook-timestamp: must be the signing time in seconds since the epoch, within 5 minutes of the server's clock");
    }
    throw new ApiError(401, "webhook-signature: no signature matches the trigger's signing secret");
  }
}

/** The delivery's id, for de-duplication: `webhook-id`, else `Idempotency-Key`, else none. */
function deliveryKey(delivery: Delivery): string | undefined {
  const key = header(delivery.headers, 'webhook-id') || header(delivery.headers, 'idempotency-key');
  return key ? key.slice(0, 200) : undefined;
}

async function replyOfEarlierDelivery(ctx: ServiceContext, runId: string, httpStatus: number): Promise<DeliveryAccepted> {
  const run = await ctx.store.runs.find(runId);
  if (httpStatus === 409) throw refused(run?.error ?? 'the run was refused', runId);
  return { runId, status: run?.status ?? 'queued', repeated: true };
}

/** A delivery handled (deliver, below), its outcome counted in the metrics. */
export function deliverWebhook(ctx: ServiceContext, delivery: Delivery, nowMs = Date.now()): Promise<DeliveryAccepted> {
  return countedDelivery(
    ctx,
    () => deliver(ctx, delivery, nowMs),
    (accepted) => accepted.repeated === true,
  );
}

/** A delivery to one of the receivers (a webhook's, an app's events), its outcome counted in the metrics. */
export async function countedDelivery<T>(ctx: ServiceContext, handle: () => Promise<T>, repeated: (reply: T) => boolean): Promise<T> {
  try {
    const reply = await handle();
    ctx.metrics.webhookDelivery(repeated(reply) ? 'repeated' : 'queued');
    return reply;
  } catch (err) {
    const status = err instanceof ApiError ? err.status : 500;
    if (status === 429) ctx.metrics.rateLimited('webhook');
    ctx.metrics.webhookDelivery(DELIVERY_OUTCOMES[status] ?? (status < 500 ? 'invalid' : 'error'));
    throw err;
  }
}

/** A refused delivery's outcome label, by its status. */
const DELIVERY_OUTCOMES: Record<number, string> = { 401: 'unauthorized', 404: 'unknown_url', 409: 'refused', 410: 'retired_url', 429: 'rate_limited' };

async function deliver(ctx: ServiceContext, delivery: Delivery, nowMs: number): Promise<DeliveryAccepted> {
  const { store } = ctx;
  const presented = hashSecret(delivery.secret);
  const target = await store.webhooks.target(delivery.triggerId);
  if (!target || !sameHash(presented, target.secretHash)) {
    const retired = await store.webhooks.retired(delivery.triggerId, presented);
    if (retired === 'rotated') throw new ApiError(410, 'this webhook URL was replaced by a rotation; use the new URL');
    if (retired === 'dropped') throw new ApiError(410, 'this webhook trigger was removed from its agent');
    throw notFound;
  }
  const agent = await store.agents.find(target.workspaceId, target.agentId);
  const trigger = agent?.document.triggers.find((t) => t.id === target.triggerId);
  if (!agent || !trigger || trigger.kind !== 'webhook') throw notFound; // a write removed it just now
  const doc: Agent = agent.document;
  if (doc.status !== 'active') {
    throw refused(`agent '${doc.slug}' is ${doc.status}; only an active agent's triggers fire (POST /api/build/agents/${doc.slug}/status)`, null);
  }
  if (!trigger.enabled) throw refused(`trigger '${trigger.name}' of agent '${doc.slug}' is disabled; enable it to receive deliveries`, null);
  if (trigger.signing === 'standard-webhooks') verifySignature(target.signingSecret && ctx.secrets.open(target.signingSecret, target.triggerId), delivery);

  const key = deliveryKey(delivery);
  const since = new Date(nowMs - REPEAT_WINDOW_MS).toISOString();
  if (key) {
    const earlier = await store.webhooks.delivery(trigger.id, key, since);
    if (earlier) return replyOfEarlierDelivery(ctx, earlier.runId, earlier.httpStatus);
  }
  const limit = ctx.webhookRatePerMinute;
  const minute = Math.floor(nowMs / 60_000);
  const input = deliveryInput(delivery);
  const { id, outcome } = await acceptRun(
    ctx,
    agentRun(
      agent,
      { prompt: deliveryPrompt(trigger, input), input },
      {
        workspaceId: target.workspaceId,
        startedBy: `webhook:${trigger.id}`,
        source: 'webhook',
        triggerId: trigger.id,
        ...(key && { delivery: { key, since } }),
        // Counted in the run's write, once the delivery is known to be new: copies of one delivery
        // arriving together start one run and spend one slot of the rate.
        rate: { window: minute, limit },
      },
    ),
  );
  if (outcome.status === 'repeated') return replyOfEarlierDelivery(ctx, outcome.runId!, outcome.httpStatus); // a delivery's repeat names its run
  if (outcome.status === 'rate_limited') {
    const retryAfter = Math.max(1, Math.ceil(((minute + 1) * 60_000 - nowMs) / 1000));
    throw new ApiError(
      429,
      `this trigger received ${limit} deliveries this minute, its limit; retry after ${retryAfter} s`,
      {},
      { 'Retry-After': String(retryAfter) },
    );
  }
  if (outcome.status === 'refused') {
    throw refused(refusalMessage(1, outcome.balance), id);
  }
  return { runId: id, status: 'queued' };
}
