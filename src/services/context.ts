// What every use case receives: the store, the workspace limits, and who is asking.
import type { mailResolver } from '../channels/email/sender-verdict';
import type { AppRegistry } from '../apps/registry';
import type { Principal } from '../domain/principal';
import type { CatalogModel, WorkspaceLimits } from '../domain/types';
import type { ModelProvider } from '../runtime/models/provider';
import type { QueuedRun, WorkerReservation } from '../runtime/runner';
import type { Store } from '../store/port';
import type { RunEventFeed } from './run-event-feed';
import type { Metrics } from '../metrics';
import type { RateLimiter } from './rate-limits';
import type { SecretBox } from './secret-box';
import type { VersionPages } from './version-pages';

// The caller's type lives in domain (auth names it too); the use cases take it from here.
export type { Principal };

export interface ServiceContext {
  /** Where every layer records what it did (metrics.ts; NO_METRICS when off). */
  metrics: Metrics;
  store: Store;
  limits: WorkspaceLimits;
  /** Seals and opens the secrets the store keeps recoverable (webhook signing keys). */
  secrets: SecretBox;
  /** Where the service is reached from outside: webhook URLs are built on it. */
  publicBaseUrl: string;
  /** The models the configured providers offer (the catalog lists them). */
  models: CatalogModel[];
  /** Which apps (and tools) each workspace has: the catalog, the checks of documents and the runs ask it. */
  apps: AppRegistry;
  /** The credit balance of a workspace seen for the first time. */
  defaultCredits: number;
  /** The request quotas per workspace and per caller (beyond, 429). */
  rateLimits: RateLimiter;
  /** Deliveries a webhook trigger accepts per minute; beyond, 429. */
  webhookRatePerMinute: number;
  /** Hands a run just queued to the run workers; without one, they look for queued runs in the store. */
  notifyRunQueued: (run?: QueuedRun) => void;
  /** A run worker here for a run about to be accepted, which the acceptance claims for it (see Runner.reserveWorker); null when none is free. */
  reserveRunWorker: () => WorkerReservation | null;
  /**
   * A worker for a run that another run here starts and waits for (a workflow an agent calls as a
   * tool): the waiting run's worker is lent to it, beyond the pool's size and its workspace's cap
   * (Runner.lendWorker); null when as many are lent as the pool has workers, or while they stop.
   */
  lendRunWorker: () => WorkerReservation | null;
  /** Asks a run executing in this process to stop: resolves once its end is recorded; null when it does not execute here. */
  requestRunStop: (runId: string) => Promise<void> | null;
  /** The runs' event streams. */
  runEvents: RunEventFeed;
  /** How often an idle event stream gets a keep-alive comment. */
  eventsHeartbeatMs: number;
  /** Event streams one caller may hold open on this server (beyond, 429). */
  eventStreamsPerCaller: number;
  /** How long a cancel waits for a running run to stop before it answers 202. */
  cancelWaitMs: number;
  /** The version lists' pages held (services/version-pages.ts). */
  versionPages: VersionPages;
  /** The email and WhatsApp channels' settings (docs/channels.md). */
  channels: ChannelSettings;
  /** What the evals need (docs/evals.md). */
  evals: EvalSettings;
  /** What the event endpoints need (docs/events.md). */
  events: EventSettings;
}

/** The event endpoints' bounds and their sender. */
export interface EventSettings {
  /** Endpoints one workspace may have. */
  endpointsPerWorkspace: number;
  /** Whether an endpoint may be http or reach loopback and private addresses (HTTP_TOOL_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** Asks the sender here to look for deliveries due now (a test or redelivery was just queued). */
  wake(): void;
}

/** The evals' judge and driver. */
export interface EvalSettings {
  /** The judge when a request names none (EVAL_JUDGE_MODEL), or null. */
  defaultJudge: string | null;
  /** The provider of a catalog model (the judge's), or undefined. */
  providerFor(model: string): ModelProvider | undefined;
  /** Asks the driver here for a pass now (an eval was just started); the drivers of every process also look on their timer. */
  wake(): void;
}

type MailResolver = ReturnType<typeof mailResolver>;

/** What the channels' services need of the configuration. */
export interface ChannelSettings {
  /** The agents' addresses' domain (EMAIL_DOMAIN), lower case; also the name the service authenticates mail as. */
  emailDomain: string;
  /** The name this service writes in Authentication-Results. */
  mtaName: string;
  maxRecipients: number;
  maxBytes: number;
  senderRunsPerHour: number;
  /** Resolves SPF, DKIM and DMARC records (EMAIL_DNS_SERVERS); undefined: the system's resolver. */
  mailResolver: MailResolver;
  /** Whether mail can leave (SMTP_RELAY_URL is set); without it, mail is recorded unsent. */
  relayConfigured: boolean;
}
