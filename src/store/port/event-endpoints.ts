// Event subscriptions (docs/events.md): a workspace's event endpoints, and the outbox of their
// deliveries. Events and their deliveries are written by the database itself, in the transaction of
// the change that caused them (the migrations' triggers); this port reads and moves them on.
import type { AttemptOutcome, DeliveryAttempt } from '../../domain/event-delivery';

export type { AttemptOutcome, DeliveryAttempt };
export type EventEndpointStatus = 'enabled' | 'disabled';
export type EventDeliveryStatus = 'pending' | 'delivering' | 'succeeded' | 'failed';

export interface EventEndpointRecord {
  id: string;
  url: string;
  eventTypes: string[];
  description: string | null;
  status: EventEndpointStatus;
  disabledReason: string | null;
  /** Every space's events (its writer was an administrator), or the workspace's own and `teams`'. */
  allSpaces: boolean;
  teams: string[];
  /** The signing secret as the services sealed it. */
  sealedSecret: string;
  secretPrefix: string;
  /** The rotated secret that still signs beside the current one until `untilMs`, or null. */
  previous: { sealed: string; untilMs: number } | null;
  createdAt: string;
  stampMicros: number;
}

/** What a replace writes: the secret stays. */
export type EventEndpointChange = Pick<EventEndpointRecord, 'url' | 'eventTypes' | 'description' | 'status' | 'allSpaces' | 'teams'>;
export type EventEndpointCreate = EventEndpointChange & Pick<EventEndpointRecord, 'id' | 'sealedSecret' | 'secretPrefix'>;

export interface EventDeliveryRecord {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  status: EventDeliveryStatus;
  createdMs: number;
  nextAttemptMs: number | null;
  attempts: DeliveryAttempt[];
  /** The event's body, as sent. */
  body: string;
}

/** A delivery claimed for one attempt: what the attempt sends, and where. */
export interface ClaimedDelivery {
  id: string;
  workspaceId: string;
  endpointId: string;
  eventId: string;
  /** This attempt's number (the claim's): only it may record the attempt. */
  attempt: number;
  manual: boolean;
  body: string;
  url: string;
  sealedSecret: string;
  previous: { sealed: string; untilMs: number } | null;
}

/** What names a claim: the delivery (by its endpoint and id) and the attempt the claim made. */
export type ClaimKey = Pick<ClaimedDelivery, 'id' | 'endpointId' | 'attempt'>;

/** The most attempts a delivery's log keeps (the last ones). */
export const DELIVERY_LOG_ATTEMPTS = 20;

export type EndpointCreateOutcome = { ok: true; record: EventEndpointRecord } | { ok: false; reason: 'limit_reached' };
export type EndpointReplaceOutcome = { ok: true; record: EventEndpointRecord } | { ok: false; current: EventEndpointRecord | null };
export type RedeliverOutcome = 'queued' | 'unfinished' | 'disabled' | 'missing';

export interface EventEndpointRepository {
  /** The workspace's endpoints, by id (time-ordered: oldest first). */
  list(workspaceId: string): Promise<EventEndpointRecord[]>;
  get(workspaceId: string, id: string): Promise<EventEndpointRecord | null>;
  /** Adds the endpoint unless the workspace holds `limit`; subscribes it to its types while enabled. */
  create(workspaceId: string, write: EventEndpointCreate, limit: number): Promise<EndpointCreateOutcome>;
  /** Writes `change` if the stored stamp is still `expectedStamp`; enabling clears the failure clock and the reason. */
  replace(workspaceId: string, id: string, expectedStamp: number, change: EventEndpointChange): Promise<EndpointReplaceOutcome>;
  /** A new secret; the current one becomes `previous` (null: dropped at once). Null when the endpoint is gone. */
  rotate(workspaceId: string, id: string, secret: { sealed: string; prefix: string }, previousUntilMs: number | null): Promise<EventEndpointRecord | null>;
  /** Removes the endpoint, its subscriptions and its deliveries, if its stamp is still `expectedStamp`. */
  remove(workspaceId: string, id: string, expectedStamp: number): Promise<'removed' | 'stale' | 'missing'>;
  /** Writes a `webhook.test` event and its one delivery to the endpoint, if it is enabled; the delivery's id. */
  queueTest(workspaceId: string, id: string, nowMs: number): Promise<string | null>;
  /** The endpoint's deliveries, newest first, after (older than) `before`, at most `limit`. */
  deliveries(
    workspaceId: string,
    endpointId: string,
    query: { status: EventDeliveryStatus | null; before: string | null; limit: number },
  ): Promise<EventDeliveryRecord[]>;
  delivery(workspaceId: string, endpointId: string, deliveryId: string): Promise<EventDeliveryRecord | null>;
  /** Queues one more attempt of an ended delivery, now (its failure is final). */
  redeliver(workspaceId: string, endpointId: string, deliveryId: string, nowMs: number): Promise<RedeliverOutcome>;
  /**
   * Claims up to `limit` due deliveries of enabled endpoints for one attempt each, until
   * `leaseUntilMs`: pending ones whose time came and claims that lapsed. Each endpoint gets at most
   * `perEndpoint` attempts at once; the endpoints (so the workspaces) take turns, the first due of
   * each before the second of any.
   */
  claimDue(nowMs: number, leaseUntilMs: number, limit: number, perEndpoint: number): Promise<ClaimedDelivery[]>;
  /**
   * Records the claimed attempt's outcome, if the claim is still this attempt's (false otherwise),
   * and the endpoint's health: a success clears its failure clock, a failure starts it, and an
   * endpoint failing since `disableAfterMs` ago, or told to (`disableReason`), is disabled.
   */
  finishAttempt(claim: ClaimKey, outcome: AttemptOutcome, nowMs: number, disableAfterMs: number): Promise<boolean>;
  /** Deletes up to `limit` deliveries that ended before `beforeMs`; how many went. */
  prune(beforeMs: number, limit: number): Promise<number>;
  /** Every endpoint's sealed secrets (a SECRETS_KEY rotation's reseal), by id after `afterId`, at most `limit`. */
  sealedSecrets(afterId: string, limit: number): Promise<SealedEndpointSecrets[]>;
  /** Replaces a sealed secret if it is still `from` (one conditional write); whether it did. */
  replaceSealed(id: string, which: 'secret' | 'previous', from: string, to: string): Promise<boolean>;
}

export interface SealedEndpointSecrets {
  id: string;
  workspaceId: string;
  secret: string;
  /** A rotation's previous secret, while it is kept. */
  previous: string | null;
}
