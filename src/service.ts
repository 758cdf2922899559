// Wires the parts of the service from a Config: the store, the token verifier (embedded issuer or
// an external one), and the HTTP app. main.ts listens; tests call this with a temporary database.
import { randomUUID } from 'node:crypto';
import { createAppRegistry } from './apps/registry';
import { loadMarketplace, MarketplaceError, type SkillMarketplace } from './apps/skills/marketplace';
import { callWorkflowTool } from './services/workflow-tools';
import { createCredentialSource, resealConnectionSecrets } from './services/connection-credentials';
import type express from 'express';
import path from 'node:path';
import { ConfigError, type Config } from './config';
import { createBearerAuth } from './auth/bearer';
import { remoteKeySource, staticKeySource, type KeySource } from './auth/key-source';
import { generateSigningKey, localIssuerFromKey, type LocalIssuer } from './auth/local-issuer';
import { createApp, type Readiness } from './http/app';
import type { Logger } from './log';
import { createModelRegistry } from './runtime/models';
import { createRunner, type Runner } from './runtime/runner';
import { openStore } from './store/open';
import type { Store } from './store/port';
import { acquireServeLock, type ServeLock } from './data-directory/serve-lock';
import { startMaintenance, type Maintenance } from './services/maintenance';
import { startScheduler, type Scheduler } from './services/scheduler';
import { startEventDispatch, type EventDispatch } from './services/app-event-dispatch';
import { startChannelSender, type ChannelSender } from './services/channel-sender';
import { startEvalDriver, type EvalDriver } from './services/eval-driver';
import { startEventSender, type EventSender } from './services/event-sender';
import { queueChannelMessage } from './services/channel-outbox';
import { relayFromUrl } from './channels/email/relay';
import { mailResolver } from './channels/email/sender-verdict';
import type { ServiceContext } from './services/context';
import { createRunEventFeed } from './services/run-event-feed';
import { createSecretBox, generateSecretKey, parseSecretKeys, type SecretBox } from './services/secret-box';
import { resealSigningSecrets } from './services/webhooks';
import { resealEndpointSecrets } from './services/event-endpoints';
import { VersionPages } from './services/version-pages';
import { createMcpEndpoint, mcpResourceMetadataUrl } from './mcp/server';
import { createMetrics, NO_METRICS } from './metrics';
import { createRateLimiter } from './services/rate-limits';
import { tracingOn } from './tracing';
import { instrumentedStore } from './store/instrumented';
import { readOrCreateKeyFile, SECRETS_KEY_FILE } from './data-directory/key-file';
import { DataDirectoryError } from './data-directory/data-directory';

export interface Service {
  app: express.Express;
  /** What the use cases receive (tests drive services with it). */
  ctx: ServiceContext;
  store: Store;
  runner: Runner;
  maintenance: Maintenance;
  scheduler: Scheduler;
  /** Starts the runs of the kv app's events. */
  events: EventDispatch;
  /** Sends what the agents' channel tools queued. */
  outbox: ChannelSender;
  /** Runs and grades the evals. */
  evalDriver: EvalDriver;
  /** The event outbox's sender (docs/events.md). */
  eventSender: EventSender;
  /** Present when the service is its own issuer (no AUTH_ISSUER). */
  localIssuer: LocalIssuer | null;
  /** Set `draining` when a shutdown begins: /readyz answers 503 from then on. */
  readiness: Readiness;
  /** Stops the run workers (waiting up to graceMs for runs in progress) and closes the store. */
  close(graceMs?: number): Promise<void>;
}

/** Limits of the http.request tool. */
const HTTP_TOOL = { timeoutMs: 10_000, maxBytes: 1024 * 1024 };
/** How often the kv events waiting are looked for (none while the scheduler is off: SCHEDULER_TICK_MS=0). */
const EVENT_DISPATCH_MS = 250;
/** How often the outbox looks for messages due to be sent, while the scheduler runs. */
const OUTBOX_SEND_MS = 500;
/** How often the evals due are looked for, while the scheduler runs. */
const EVAL_DRIVE_MS = 500;
/** How long one send to the relay or the Graph API may take. */
const CHANNEL_SEND_TIMEOUT_MS = 30_000;

/** The issuer the embedded key pair (kept by the store) signs as: the service's own public address. */
export async function localIssuerFor(config: Config, store: Store): Promise<LocalIssuer> {
  return localIssuerFromKey(await store.signingKey(generateSigningKey), config.publicBaseUrl);
}

/**
 * The box that seals stored secrets: SECRETS_KEY's keys, or the key file in the data directory
 * (made at first start). Signing keys not sealed with the current key are sealed again now.
 */
async function openSecretBox(config: Config, store: Store, logger: Logger): Promise<SecretBox> {
  let keys = config.secretsKeys;
  if (!keys) {
    const file = path.join(config.dataDir, SECRETS_KEY_FILE);
    keys = parseSecretKeys(readOrCreateKeyFile(file, generateSecretKey));
    if (!keys) throw new ConfigError(`${file}: does not hold a base64 key of 32 bytes; restore it, or set SECRETS_KEY`);
    if (config.databaseUrl) {
      logger.warn(
        { file },
        'SECRETS_KEY is not set: stored secrets are sealed with a key file on this machine; every replica needs the same key (set SECRETS_KEY)',
      );
    }
  }
  const box = createSecretBox(keys);
  const resealed =
    (await resealSigningSecrets(store, box)) +
    (await resealConnectionSecrets(store.connections, box)) +
    (await resealEndpointSecrets(store.eventEndpoints, box));
  if (resealed)
    logger.info({ resealed }, 'sealed stored secrets (signing keys, connection credentials and tokens, event endpoint secrets) with the current key');
  return box;
}

/** What the connection use cases need, for the command line (`build-api connections add`): the same parts the service composes. */
export async function connectionContext(config: Config, store: Store, logger: Logger) {
  const secrets = await openSecretBox(config, store, logger);
  const credentials = createCredentialSource({ connections: store.connections, secrets, allowPrivate: config.httpToolAllowPrivate });
  return { store, secrets, publicBaseUrl: config.publicBaseUrl, apps: createAppRegistry({ store, credentials, allowPrivate: config.httpToolAllowPrivate }) };
}

/** The skills of the marketplace (SKILLS_DIR), read once; a skill that breaks a rule stops the start, naming it. */
function marketplaceOf(config: Config): SkillMarketplace {
  try {
    return loadMarketplace(config.skills.dir, config.skills.optional);
  } catch (err) {
    if (err instanceof MarketplaceError) throw new ConfigError(`SKILLS_DIR: ${err.message}`);
    throw err;
  }
}

/** The store could not be opened or migrated at start (unreachable, refused, not writable). */
export class StoreUnavailableError extends Error {}

export interface ServiceOptions {
  /** Check every reply against the spec (tests). */
  validateResponses?: boolean;
  /** Add the process's own metrics (CPU, memory, event loop, GC) to the registry: one per process, so only `serve` asks. */
  processMetrics?: boolean;
}

export async function createService(config: Config, logger: Logger, opts: ServiceOptions = {}): Promise<Service> {
  // A SQLite file has one server: taken before anything reads the file, as a second server on it
  // would take the first one's live runs for abandoned ones. PostgreSQL replicas need no such lock.
  const lock: ServeLock = config.databaseUrl ? { release: () => undefined } : acquireServeLock(config.databasePath);
  let store: Store | null = null;
  try {
    store = await openStore(config).catch((err: unknown) => {
      if (err instanceof DataDirectoryError) throw err; // worded for the operator already
      throw new StoreUnavailableError(
        `cannot open the store (${config.databaseUrl ? 'PostgreSQL at DATABASE_URL' : `SQLite file ${config.databasePath}`}): ${(err as Error).message ?? err}`,
      );
    });
    return await assemble(config, logger, opts, store, lock);
  } catch (err) {
    await store?.close();
    lock.release();
    throw err;
  }
}

/**
 * The HTTP application and, beside it, the MCP endpoint: the same operations, and the same tokens
 * (from the configured issuer, or this service's own) challenged with each one's metadata.
 */
async function webLayers(config: Config, logger: Logger, opts: ServiceOptions, ctx: ServiceContext, readiness: Readiness, localIssuer: LocalIssuer | null) {
  const issuer = config.auth.issuer ?? (localIssuer as LocalIssuer).issuer;
  const keySource: KeySource = localIssuer
    ? staticKeySource(localIssuer.jwks)
    : remoteKeySource({ issuer, jwksUri: config.auth.jwksUri, maxAgeMs: config.auth.jwksCacheMs });
  const bearer = {
    issuer,
    audience: config.auth.audience,
    workspaceClaim: config.auth.workspaceClaim,
    teamsClaim: config.auth.teamsClaim,
    adminGrant: config.auth.adminGrant,
    keySource,
    rememberMs: config.auth.jwksCacheMs,
  };
  let mcp: ReturnType<typeof createMcpEndpoint> | undefined;
  const app = await createApp({
    ctx,
    store: ctx.store,
    logger,
    publicBaseUrl: config.publicBaseUrl,
    issuer,
    authenticate: createBearerAuth({ ...bearer, resourceMetadataUrl: `${config.publicBaseUrl}/.well-known/oauth-protected-resource` }),
    localJwks: localIssuer?.jwks,
    validateResponses: opts.validateResponses,
    readiness,
    corsAllowedOrigins: config.corsAllowedOrigins,
    beside: (operations) => {
      mcp = createMcpEndpoint({
        operations,
        ctx,
        logger,
        authenticate: createBearerAuth({ ...bearer, resourceMetadataUrl: mcpResourceMetadataUrl(config.publicBaseUrl), scopeInEveryChallenge: true }),
        publicBaseUrl: config.publicBaseUrl,
        issuer,
      });
      return mcp.handler;
    },
  });
  return { app, mcp };
}

/** What the channels' services need of the configuration (docs/channels.md). */
const channelSettings = (channels: Config['channels']): ServiceContext['channels'] => ({
  emailDomain: channels.emailDomain,
  mtaName: channels.emailDomain,
  maxRecipients: channels.maxRecipients,
  maxBytes: channels.maxBytes,
  senderRunsPerHour: channels.senderRunsPerHour,
  mailResolver: mailResolver(channels.dnsServers),
  relayConfigured: channels.relayUrl !== null,
});

/** The outbox's sender, on its timer while the scheduler runs; its stop closes the relay's connections too. */
function startOutbox(ctx: ServiceContext, config: Config, logger: Logger): ChannelSender {
  const relay = relayFromUrl(config.channels.relayUrl ?? undefined);
  const sender = startChannelSender(ctx, {
    relay,
    graph: { baseUrl: config.channels.graphBaseUrl, version: config.channels.graphVersion, timeoutMs: CHANNEL_SEND_TIMEOUT_MS },
    retryBaseMs: config.channels.retryBaseMs,
    intervalMs: config.schedulerTickMs && OUTBOX_SEND_MS,
    logger,
  });
  return {
    send: sender.send,
    stop: async () => {
      await sender.stop();
      relay?.close();
    },
  };
}

async function assemble(config: Config, logger: Logger, opts: ServiceOptions, opened: Store, lock: ServeLock): Promise<Service> {
  const metrics = config.metricsPort ? createMetrics({ activeRuns: () => opened.runs.active(), defaultMetrics: opts.processMetrics ?? false }) : NO_METRICS;
  const store = metrics === NO_METRICS && !tracingOn() ? opened : instrumentedStore(opened, metrics.storeCall, config.databaseUrl ? 'postgresql' : 'sqlite');
  const localIssuer = config.auth.issuer ? null : await localIssuerFor(config, store);
  const models = createModelRegistry(config);
  const http = { ...HTTP_TOOL, allowPrivate: config.httpToolAllowPrivate };
  const secrets = await openSecretBox(config, store, logger);
  const credentials = createCredentialSource({ connections: store.connections, secrets, allowPrivate: config.httpToolAllowPrivate });
  const apps = createAppRegistry({ store, credentials, allowPrivate: config.httpToolAllowPrivate, marketplace: marketplaceOf(config) });
  const runner = createRunner({
    store,
    models,
    apps,
    http,
    limits: config.runLimits,
    workers: config.runWorkers,
    perWorkspace: config.runWorkersPerWorkspace,
    approvalTimeoutMs: config.approvalTimeoutMs,
    leaseMs: config.runLeaseMs,
    logger,
    metrics,
    // Called by runs, which start once ctx exists (runner.start below).
    childWorkflows: (caller, call) => callWorkflowTool(ctx, caller, call, config.runLimits.workflowToolWaitMs),
    channelSends: (caller, call) => queueChannelMessage(ctx, caller, call),
  });
  let evalDriver: EvalDriver | undefined;
  let eventSender: EventSender | undefined;
  const ctx: ServiceContext = {
    metrics,
    store,
    secrets,
    limits: config.limits,
    publicBaseUrl: config.publicBaseUrl,
    models: models.catalog,
    apps,
    defaultCredits: config.defaultCredits,
    rateLimits: createRateLimiter(config.rateLimits, store.quotas, metrics.rateLimited),
    webhookRatePerMinute: config.webhookRatePerMinute,
    notifyRunQueued: runner.notify,
    reserveRunWorker: runner.reserveWorker,
    lendRunWorker: runner.lendWorker,
    requestRunStop: runner.requestStop,
    runEvents: createRunEventFeed(store, logger, { perCaller: config.eventStreamsPerCaller, streamsOpen: metrics.streamsOpen }),
    eventsHeartbeatMs: config.eventsHeartbeatMs,
    eventStreamsPerCaller: config.eventStreamsPerCaller,
    cancelWaitMs: config.cancelWaitMs,
    versionPages: new VersionPages(config.versionsKept),
    channels: channelSettings(config.channels),
    // The driver starts below, once ctx exists.
    evals: { defaultJudge: config.evalJudgeModel, providerFor: models.providerFor, wake: () => void evalDriver?.run() },
    events: { endpointsPerWorkspace: config.events.endpointsPerWorkspace, allowPrivate: config.httpToolAllowPrivate, wake: () => void eventSender?.send() },
  };
  const readiness: Readiness = { draining: false };
  const { app, mcp } = await webLayers(config, logger, opts, ctx, readiness, localIssuer);
  await runner.start();
  const { maintenance, scheduler, events, outbox, evalDriver: drivingEvals, eventSender: sendingEvents } = startPasses(ctx, config, logger, http);
  evalDriver = drivingEvals;
  eventSender = sendingEvents;
  return {
    app,
    ctx,
    store,
    readiness,
    runner,
    maintenance,
    scheduler,
    events,
    outbox,
    evalDriver: drivingEvals,
    eventSender: sendingEvents,
    localIssuer,
    close: async (graceMs = 5000) => {
      await scheduler.stop();
      await events.stop();
      await outbox.stop();
      await drivingEvals.stop();
      await sendingEvents.stop();
      maintenance.stop();
      ctx.runEvents.stop();
      await mcp?.close();
      await runner.stop(graceMs);
      await store.close();
      lock.release();
    },
  };
}

/** The passes every process runs beside its requests (each safe beside other replicas'). */
function startPasses(ctx: ServiceContext, config: Config, logger: Logger, http: typeof HTTP_TOOL & { allowPrivate: boolean }) {
  const maintenance = startMaintenance(ctx.store, logger, {
    runRetentionMs: config.runRetentionMs,
    versionsKept: config.versionsKept,
    quotaWindowMs: config.rateLimits.windowSeconds * 1000,
  });
  const scheduler = startScheduler(ctx, {
    catchUpMs: config.scheduleCatchUpMs,
    tickMs: config.schedulerTickMs,
    http,
    limits: config.runLimits,
    detectorTimeoutMs: config.pollDetectorTimeoutMs,
    logger,
  });
  const events = startEventDispatch(ctx, { intervalMs: config.schedulerTickMs && EVENT_DISPATCH_MS, logger });
  const outbox = startOutbox(ctx, config, logger);
  const evalDriver = startEvalDriver(ctx, {
    intervalMs: config.schedulerTickMs && EVAL_DRIVE_MS,
    logger,
    owner: `evals:${randomUUID()}`,
    leaseMs: config.runLeaseMs,
  });
  const eventSender = startEventSender(ctx, {
    config: config.events,
    allowPrivate: config.httpToolAllowPrivate,
    logger,
    intervalMs: config.events.concurrency === 0 ? 0 : config.schedulerTickMs && config.events.pollMs,
  });
  return { maintenance, scheduler, events, outbox, evalDriver, eventSender };
}
