// Environment → one typed, validated Config. A bad value stops start-up with a one-line message
// that names the variable, so an operator can fix it without reading code.
import path from 'node:path';
import { projectRoot } from './paths';
import { channelConfig, type ChannelConfig } from './channel-config';
import { ConfigError, httpUrl, integer, nonEmpty, type Env } from './config-values';
import { eventConfig, type EventConfig } from './event-config';
import type { WorkspaceLimits } from './domain/types';
import { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from './http/server';
import { DEFAULT_RUN_LIMITS, type RunLimits } from './runtime/limits';
import { DEFAULT_RATE_LIMITS, type RateLimitConfig } from './services/rate-limits';
import { parseSecretKeys } from './services/secret-box';

export interface AuthConfig {
  /** null: the server is its own issuer (key pair in the data directory). */
  issuer: string | null;
  jwksUri: string | null;
  audience: string;
  workspaceClaim: string;
  /** The claim that lists the caller's team slugs (AUTH_TEAMS_CLAIM): an array, or a space-separated string. */
  teamsClaim: string;
  /**
   * What makes the caller a workspace administrator (AUTH_ADMIN_GRANT): a scope or permission (in
   * `scope`, `scp` or `permissions`) or a role (in `roles`, Entra ID's app roles, or
   * `realm_access.roles`, Keycloak's) of this name.
   */
  adminGrant: string;
  /**
   * How long an external issuer's key set is used before it is fetched again, in ms; also the
   * longest a token verified with a key is remembered, so a key the issuer removes stops verifying
   * within this time.
   */
  jwksCacheMs: number;
}

export interface OpenAiConfig {
  baseUrl: string;
  apiKey: string | null;
  /** The model ids the provider offers; the catalog lists them. */
  models: string[];
}

/** The metrics listener's default port: the one OpenTelemetry's Prometheus exporter uses. */
export const DEFAULT_METRICS_PORT = 9464;

export interface Config {
  port: number;
  host: string;
  /** The Prometheus metrics listener's port on `host` (METRICS_PORT); 0: no metrics. */
  metricsPort: number;
  /**
   * Whether METRICS_PORT was set: a port set that cannot be listened on stops the start; the
   * default one, taken, leaves metrics off (see serve).
   */
  metricsPortSet: boolean;
  /** After SIGTERM, how long /readyz answers 503 while requests are still served, before the listener closes (DRAIN_SECONDS). */
  drainMs: number;
  /** The SQLite file (DATABASE_PATH), used unless databaseUrl is set. */
  databasePath: string;
  dataDir: string;
  /** A PostgreSQL database (DATABASE_URL, postgres://…): replicas share it. Null: the SQLite file. */
  databaseUrl: string | null;
  /** Connections each process keeps to PostgreSQL in each of its two pools, at most (PG_POOL_SIZE). */
  pgPoolSize: number;
  /** How long a worker's claim on a run lasts unless renewed (RUN_LEASE_SECONDS): after it, another replica may take the run over. */
  runLeaseMs: number;
  publicBaseUrl: string;
  /**
   * The origins whose browser applications may call the API (CORS_ALLOWED_ORIGINS: a comma-separated
   * list of `scheme://host[:port]`, or `*`); empty: none, no CORS fields are sent.
   */
  corsAllowedOrigins: string[] | '*';
  auth: AuthConfig;
  defaultCredits: number;
  logLevel: string;
  limits: WorkspaceLimits;
  /** How many runs execute at once (RUN_WORKERS; default 4 on SQLite, 32 on PostgreSQL). */
  runWorkers: number;
  /** How many runs of one workspace execute at once, at most (RUN_WORKERS_PER_WORKSPACE). */
  runWorkersPerWorkspace: number;
  /** Let the http.request tool reach private, loopback and link-local addresses (tests, local setups). */
  httpToolAllowPrivate: boolean;
  /** The marketplace's skill folders (SKILLS_DIR; default the repository's skills/, which may be absent). */
  skills: { dir: string; optional: boolean };
  /** An OpenAI-compatible chat-completions provider, when OPENAI_BASE_URL is set. */
  openai: OpenAiConfig | null;
  /** The model that judges evals' judged criteria when a request names none (EVAL_JUDGE_MODEL), or null: they are skipped. */
  evalJudgeModel: string | null;
  /** Deliveries each webhook trigger accepts per minute (WEBHOOK_RATE_LIMIT). */
  webhookRatePerMinute: number;
  /** The request quotas per workspace and per caller (RATE_LIMIT_*). */
  rateLimits: RateLimitConfig;
  /** How late a schedule's due time may still fire after an outage (SCHEDULE_CATCH_UP_SECONDS). */
  scheduleCatchUpMs: number;
  /** How often the scheduler looks for due schedules (SCHEDULER_TICK_MS); 0: never, nothing fires. */
  schedulerTickMs: number;
  /** How long a poll trigger's detector may run (POLL_DETECTOR_TIMEOUT_SECONDS); then it is recorded as failed. */
  pollDetectorTimeoutMs: number;
  /** How long a run waits for its held tool calls to be decided before it fails (RUN_APPROVAL_TIMEOUT_SECONDS). */
  approvalTimeoutMs: number;
  /** How long finished runs and their events are kept (RUN_RETENTION_DAYS). */
  runRetentionMs: number;
  /** The versions each agent and workflow keeps besides those runs name (VERSIONS_KEPT); older ones are pruned. */
  versionsKept: number;
  /** How often an idle event stream gets a keep-alive comment (EVENTS_HEARTBEAT_SECONDS). */
  eventsHeartbeatMs: number;
  /** Event streams one caller may hold open on one server (EVENT_STREAMS_PER_CALLER). */
  eventStreamsPerCaller: number;
  /** How long a cancel waits for a running run to stop before it answers 202 (RUN_CANCEL_WAIT_MS). */
  cancelWaitMs: number;
  /** What one run may render, hold, return and wait for (RUN_*_BYTES, RUN_TOOL_TIMEOUT_SECONDS). */
  runLimits: RunLimits;
  /** The keys that seal stored secrets (SECRETS_KEY, the first seals); null: the key file in the data directory. */
  secretsKeys: Buffer[] | null;
  /** Open connections, and how long a request may take to arrive or a connection stay silent (HTTP_*). */
  connections: ConnectionLimits;
  /** The email and WhatsApp channels (docs/channels.md). */
  channels: ChannelConfig;
  /** The event subscriptions' deliveries (docs/events.md). */
  events: EventConfig;
}

export { ConfigError } from './config-values';
export type { EventConfig } from './event-config';
export type { ChannelConfig } from './channel-config';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export const DEFAULT_LIMITS: WorkspaceLimits = Object.freeze({
  document_bytes: 65536,
  agents: 200,
  workflows: 200,
  triggers_per_agent: 20,
  workflow_steps: 10,
  agent_steps: 40,
});

/** CORS_ALLOWED_ORIGINS: `*`, or origins exactly as a browser sends them (`https://app.example.org`, no path). */
function corsOrigins(env: Env): string[] | '*' {
  const raw = (env.CORS_ALLOWED_ORIGINS ?? '').trim();
  if (raw === '*') return '*';
  const origins = raw
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  for (const origin of origins) {
    let url: URL | null = null;
    try {
      url = new URL(origin);
    } catch {
      // reported below
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== origin) {
      throw new ConfigError(`CORS_ALLOWED_ORIGINS: '${origin}' is not an origin; write scheme://host[:port] with no path or trailing slash (or * alone)`);
    }
  }
  return origins;
}

/** A PostgreSQL connection URL (postgres:// or postgresql://), or null when unset. */
function postgresUrl(env: Env, name: string): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name}: must be a postgres:// URL, got a value that is not a URL`);
  }
  // The value is not echoed back: it may carry a password.
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')
    throw new ConfigError(`${name}: must be a postgres:// or postgresql:// URL, got ${url.protocol}//…`);
  return raw;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name}: must be true or false, got '${raw}'`);
}

/** A host name that stays on this machine: localhost, 127.0.0.0/8 or ::1 (as URL.hostname spells them). */
function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

function openAi(env: Env): OpenAiConfig | null {
  const baseUrl = httpUrl(env, 'OPENAI_BASE_URL', null);
  const models = (env.OPENAI_MODELS ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  if (!baseUrl) {
    if (models.length) throw new ConfigError('OPENAI_MODELS: needs OPENAI_BASE_URL as well');
    return null;
  }
  if (new URL(baseUrl).protocol === 'http:' && !isLoopbackHost(new URL(baseUrl).hostname)) {
    throw new ConfigError(
      `OPENAI_BASE_URL: must be https (the API key would travel in clear text); http is allowed for a loopback host only, got '${baseUrl}'`,
    );
  }
  if (!models.length) throw new ConfigError('OPENAI_MODELS: required with OPENAI_BASE_URL, a comma-separated list of model ids');
  const bad = models.find((m) => !/^[A-Za-z0-9._:/-]{1,120}$/.test(m));
  if (bad) throw new ConfigError(`OPENAI_MODELS: '${bad}' is not a model id (1..120 letters, digits and . _ : / -)`);
  return { baseUrl, apiKey: env.OPENAI_API_KEY || null, models };
}

/** EVAL_JUDGE_MODEL: one of OPENAI_MODELS (a judge is a provider's model, never the scripted one). */
function evalJudge(env: Env, openai: OpenAiConfig | null): string | null {
  const model = env.EVAL_JUDGE_MODEL?.trim();
  if (!model) return null;
  if (!openai?.models.includes(model)) {
    throw new ConfigError(
      `EVAL_JUDGE_MODEL: '${model}' is not one of OPENAI_MODELS (${openai ? openai.models.join(', ') : 'OPENAI_BASE_URL is not set'}); a judge is a provider's model`,
    );
  }
  return model;
}

// Workers a process runs by default. On SQLite a run's writes are in-process and its worker is busy
// on this CPU; on PostgreSQL a worker mostly waits for the database's replies, so more runs in flight
// are what keeps the CPU busy: 4 → 16 workers took a 3-step workflow's executions from 106 to 232–286/s,
// and 16 → 32, once an acceptance claimed its run for a free worker (whom it holds from then), 665 →
// 787/s (docs/benchmarks.md, issue 25). Each worker holds at most one run's state and step outputs (docs/runs.md).
const SQLITE_RUN_WORKERS = 4;
const PG_RUN_WORKERS = 32;

export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = nonEmpty(env, 'HOST', '127.0.0.1', /^[A-Za-z0-9.:\-[\]]+$/, 'must be a host name or IP address');
  const databasePath = path.resolve(cwd, env.DATABASE_PATH || path.join('data', 'build.db'));
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')}, got '${logLevel}'`);
  }
  const databaseUrl = postgresUrl(env, 'DATABASE_URL');
  const runWorkers = integer(env, 'RUN_WORKERS', databaseUrl ? PG_RUN_WORKERS : SQLITE_RUN_WORKERS, 1, 64);
  const publicBaseUrl = httpUrl(env, 'PUBLIC_BASE_URL', `http://localhost:${port}`) as string;
  const issuer = httpUrl(env, 'AUTH_ISSUER', null, false);
  const jwksUri = httpUrl(env, 'AUTH_JWKS_URI', null, false);
  const eventsHeartbeatMs = integer(env, 'EVENTS_HEARTBEAT_SECONDS', 15, 1, 300) * 1000;
  const openai = openAi(env);
  if (jwksUri && !issuer) throw new ConfigError('AUTH_JWKS_URI: needs AUTH_ISSUER as well');
  return {
    port,
    host,
    metricsPort: integer(env, 'METRICS_PORT', DEFAULT_METRICS_PORT, 0, 65_535),
    metricsPortSet: Boolean(env.METRICS_PORT),
    drainMs: integer(env, 'DRAIN_SECONDS', 5, 0, 300) * 1000,
    databasePath,
    dataDir: path.dirname(databasePath),
    databaseUrl,
    pgPoolSize: integer(env, 'PG_POOL_SIZE', 10, 1, 1000),
    runLeaseMs: integer(env, 'RUN_LEASE_SECONDS', 30, 2, 3600) * 1000,
    publicBaseUrl,
    corsAllowedOrigins: corsOrigins(env),
    auth: {
      issuer,
      jwksUri,
      audience: nonEmpty(env, 'AUTH_AUDIENCE', 'build-api', /^\S{1,200}$/, 'must be 1..200 characters without spaces'),
      workspaceClaim: nonEmpty(env, 'AUTH_WORKSPACE_CLAIM', 'workspace', /^[A-Za-z0-9_:./-]{1,100}$/, 'must be a claim name'),
      teamsClaim: nonEmpty(env, 'AUTH_TEAMS_CLAIM', 'teams', /^[A-Za-z0-9_:./-]{1,100}$/, 'must be a claim name'),
      adminGrant: nonEmpty(env, 'AUTH_ADMIN_GRANT', 'build:admin', /^[A-Za-z0-9_:./-]{1,100}$/, 'must be a scope or role name'),
      jwksCacheMs: integer(env, 'AUTH_JWKS_CACHE_SECONDS', 600, 1, 86_400) * 1000,
    },
    defaultCredits: integer(env, 'DEFAULT_CREDITS', 1000, 0, 1_000_000_000),
    logLevel,
    limits: { ...DEFAULT_LIMITS },
    runWorkers,
    runWorkersPerWorkspace: integer(env, 'RUN_WORKERS_PER_WORKSPACE', Math.max(1, runWorkers - 1), 1, runWorkers),
    httpToolAllowPrivate: boolean(env, 'HTTP_TOOL_ALLOW_PRIVATE', false),
    skills: env.SKILLS_DIR ? { dir: path.resolve(env.SKILLS_DIR), optional: false } : { dir: path.join(projectRoot, 'skills'), optional: true },
    openai,
    webhookRatePerMinute: integer(env, 'WEBHOOK_RATE_LIMIT', 60, 1, 1_000_000),
    rateLimits: rateLimits(env),
    scheduleCatchUpMs: integer(env, 'SCHEDULE_CATCH_UP_SECONDS', 3600, 0, 7 * 86_400) * 1000,
    schedulerTickMs: integer(env, 'SCHEDULER_TICK_MS', 1000, 0, 60_000),
    pollDetectorTimeoutMs: integer(env, 'POLL_DETECTOR_TIMEOUT_SECONDS', 10, 1, 300) * 1000,
    approvalTimeoutMs: integer(env, 'RUN_APPROVAL_TIMEOUT_SECONDS', 86_400, 1, 30 * 86_400) * 1000,
    runRetentionMs: integer(env, 'RUN_RETENTION_DAYS', 30, 1, 3650) * 86_400_000,
    versionsKept: integer(env, 'VERSIONS_KEPT', 100, 1, 1_000_000),
    eventsHeartbeatMs,
    eventStreamsPerCaller: integer(env, 'EVENT_STREAMS_PER_CALLER', 20, 1, 10_000),
    cancelWaitMs: integer(env, 'RUN_CANCEL_WAIT_MS', 5000, 0, 60_000),
    runLimits: runLimits(env),
    connections: connectionLimits(env, eventsHeartbeatMs),
    secretsKeys: secretsKeys(env),
    channels: channelConfig(env),
    events: eventConfig(env),
    evalJudgeModel: evalJudge(env, openai),
  };
}

/** SECRETS_KEY: base64 keys of 32 bytes, comma-separated (never echoed: it is a secret). */
function secretsKeys(env: Env): Buffer[] | null {
  const raw = env.SECRETS_KEY;
  if (raw === undefined || raw === '') return null;
  const keys = parseSecretKeys(raw);
  if (!keys) throw new ConfigError('SECRETS_KEY: must be one or more base64 keys of 32 bytes, comma-separated (make one with: openssl rand -base64 32)');
  return keys;
}

function connectionLimits(env: Env, heartbeatMs: number): ConnectionLimits {
  const d = DEFAULT_CONNECTION_LIMITS;
  const limits = {
    maxConnections: integer(env, 'HTTP_MAX_CONNECTIONS', d.maxConnections, 1, 1_000_000),
    requestTimeoutMs: integer(env, 'HTTP_REQUEST_TIMEOUT_SECONDS', d.requestTimeoutMs / 1000, 1, 3600) * 1000,
    idleTimeoutMs: integer(env, 'HTTP_IDLE_TIMEOUT_SECONDS', d.idleTimeoutMs / 1000, 1, 3600) * 1000,
  };
  if (limits.idleTimeoutMs <= heartbeatMs) {
    throw new ConfigError(
      `HTTP_IDLE_TIMEOUT_SECONDS: must be longer than EVENTS_HEARTBEAT_SECONDS (${heartbeatMs / 1000}), or idle event streams would be closed`,
    );
  }
  return limits;
}

/** RATE_LIMIT_WINDOW_SECONDS and the quotas per window; a quota of 0 is off. */
function rateLimits(env: Env): RateLimitConfig {
  const d = DEFAULT_RATE_LIMITS;
  const quota = (name: string, fallback: number) => integer(env, name, fallback, 0, 1_000_000_000);
  return {
    windowSeconds: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', d.windowSeconds, 1, 86_400),
    workspace: {
      requests: quota('RATE_LIMIT_WORKSPACE', d.workspace.requests),
      runs: quota('RATE_LIMIT_WORKSPACE_RUNS', d.workspace.runs),
      validations: quota('RATE_LIMIT_WORKSPACE_VALIDATIONS', d.workspace.validations),
    },
    caller: {
      requests: quota('RATE_LIMIT_CALLER', d.caller.requests),
      runs: quota('RATE_LIMIT_CALLER_RUNS', d.caller.runs),
      validations: quota('RATE_LIMIT_CALLER_VALIDATIONS', d.caller.validations),
    },
  };
}

const KiB = 1024;
const MAX_RUN_BYTES = 256 * KiB * KiB;

function runLimits(env: Env): RunLimits {
  const d = DEFAULT_RUN_LIMITS;
  return {
    stepOutputBytes: integer(env, 'RUN_STEP_OUTPUT_BYTES', d.stepOutputBytes, KiB, MAX_RUN_BYTES),
    templateBytes: integer(env, 'RUN_TEMPLATE_BYTES', d.templateBytes, KiB, MAX_RUN_BYTES),
    renderBytes: integer(env, 'RUN_RENDER_BYTES', d.renderBytes, KiB, MAX_RUN_BYTES),
    stateBytes: integer(env, 'RUN_STATE_BYTES', d.stateBytes, KiB, MAX_RUN_BYTES),
    outputBytes: integer(env, 'RUN_OUTPUT_BYTES', d.outputBytes, KiB, MAX_RUN_BYTES),
    toolTimeoutMs: integer(env, 'RUN_TOOL_TIMEOUT_SECONDS', d.toolTimeoutMs / 1000, 1, 600) * 1000,
    workflowToolWaitMs: integer(env, 'RUN_WORKFLOW_TOOL_WAIT_SECONDS', d.workflowToolWaitMs / 1000, 1, 3600) * 1000,
  };
}
