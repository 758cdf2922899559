// `build-api serve`: config → store → HTTP server (and the metrics listener), with a shutdown a
// load balancer can follow on SIGTERM (drain, stop accepting, let requests in flight finish, hand
// back runs, close the database).
import fs from 'node:fs';
import type { Server, ServerResponse } from 'node:http';
import path from 'node:path';
import type { Registry } from 'prom-client';
import { loadConfig, ConfigError, type Config } from './config';
import { createLogger, type Logger } from './log';
import { createService, StoreUnavailableError } from './service';
import { createHttpServer } from './http/server';
import { createMetricsServer } from './http/metrics-server';
import { AlreadyServingError } from './data-directory/serve-lock';
import { DataDirectoryError } from './data-directory/data-directory';
import { projectRoot } from './paths';
import { startTracing } from './tracing-setup';
import { startSmtpIntake } from './smtp/intake';
import type { SmtpListener } from './channels/email/smtp-listener';
import type { ServiceContext } from './services/context';

const SHUTDOWN_GRACE_MS = 10_000;

export async function serve(config: Config = loadConfig()): Promise<Server> {
  const tracing = startTracing(process.env, packageVersion());
  const logger = createLogger(config.logLevel);
  // The metrics port first: whether metrics are on is decided before the service records any.
  let registry: Registry | null = null;
  const metricsServer = config.metricsPort
    ? await metricsListener(
        createMetricsServer(() => registry, logger),
        config,
        logger,
      )
    : null;
  const service = await createService(metricsServer ? config : { ...config, metricsPort: 0 }, logger, { processMetrics: true });
  registry = service.ctx.metrics.registry ?? null;
  const server = await listening(createHttpServer(service.app, config.connections), config.host, config.port, 'PORT');
  const smtp = config.channels.smtpPort ? await smtpListener(service.ctx, config, logger) : null;

  // SIGTERM: drain, then stop. Draining, /readyz answers 503 while everything is still served, so
  // that a balancer polling readiness takes this replica out before it stops listening; responses
  // ask their clients to reconnect (through the balancer, to another replica). Then the listener
  // closes, requests in flight finish (up to the grace period), event streams end (their clients
  // resume elsewhere with Last-Event-ID), runs still executing are handed back, and the process
  // exits 0. SIGINT (an interactive stop) skips the drain; a second signal exits at once.
  let phase: 'serving' | 'draining' | 'stopping' = 'serving';
  const stop = () => {
    phase = 'stopping';
    logger.info('stopping: the listener closes; requests in flight finish');
    const force = setTimeout(() => {
      logger.warn('requests still running after the grace period; closing them');
      server.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    service.ctx.runEvents.stop();
    metricsServer?.close();
    const smtpClosed = smtp?.close() ?? Promise.resolve();
    server.close(() => {
      void smtpClosed
        .then(() => service.close(SHUTDOWN_GRACE_MS))
        .then(async () => {
          await tracing?.shutdown().catch((err: unknown) => logger.warn({ err }, 'the last spans could not be exported'));
          logger.info('stopped');
          process.exit(0);
        });
    });
    server.closeIdleConnections();
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (phase !== 'serving') {
      logger.warn({ signal }, 'a second signal: exiting now');
      process.exit(1);
    }
    phase = 'draining';
    service.readiness.draining = true;
    const drainMs = signal === 'SIGINT' ? 0 : config.drainMs;
    server.prependListener('request', (_req, res: ServerResponse) => res.setHeader('Connection', 'close'));
    logger.info({ signal, drainMs }, 'draining: /readyz answers 503; requests are still served');
    setTimeout(stop, drainMs);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // Announced only now: a supervisor that signals as soon as it reads this line finds the handlers in place
  // (announced before them, a SIGTERM could still meet node's default action and kill the process undrained).
  logger.info(
    {
      address: server.address(),
      // The PostgreSQL URL is not logged: it may carry a password.
      database: config.databaseUrl ? 'postgresql' : config.databasePath,
      issuer: config.auth.issuer ?? `${config.publicBaseUrl} (built-in)`,
      docs: `${config.publicBaseUrl}/docs`,
      metrics: metricsServer ? `http://${config.host}:${config.metricsPort}/metrics` : 'off',
      smtp: smtp ? `${config.host}:${smtp.port} (mail to <agent>.<tag>@${config.channels.emailDomain})` : 'off',
      relay: config.channels.relayUrl ? 'configured' : 'none: mail is recorded unsent',
      traces: tracing?.describe ?? 'off',
    },
    'build-api listening',
  );
  return server;
}

/**
 * A command that could not start: one line on stderr naming the cause, and exit 1 — never a stack
 * trace. The operator can act on the refusals this service words itself (configuration, data
 * directory, a server already serving the file); anything else is named by what failed (the
 * listener, the store) and the system's own message and code.
 */
export function exitOnStartupFailure(err: unknown): never {
  process.stderr.write(`build-api: ${startupFailure(err)}\n`);
  process.exit(1);
}

function startupFailure(err: unknown): string {
  if (err instanceof ConfigError) return `configuration error: ${err.message}`;
  if (err instanceof AlreadyServingError || err instanceof DataDirectoryError) return err.message;
  if (err instanceof ListenError || err instanceof StoreUnavailableError) return err.message;
  const { message, code } = err as { message?: unknown; code?: unknown };
  const text = typeof message === 'string' && message ? message : String(err);
  return `start-up failed: ${text}${typeof code === 'string' && !text.includes(code) ? ` (${code})` : ''}`;
}

function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The listener could not be opened: the address is taken, not permitted, or not this machine's. */
export class ListenError extends Error {
  /** The system's code (EADDRINUSE, EACCES, …). */
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/**
 * The metrics listener on METRICS_PORT; null when that port is the default one and another process
 * holds it (another service on this machine, or an exporter: 9464 is OpenTelemetry's): the service
 * starts with metrics off and says so, since metrics are not what it is started for. A port set in
 * METRICS_PORT that cannot be listened on stops the start, as PORT does.
 */
async function metricsListener(server: Server, config: Config, logger: Logger): Promise<Server | null> {
  try {
    return await listening(server, config.host, config.metricsPort, 'METRICS_PORT');
  } catch (err) {
    if (config.metricsPortSet || !(err instanceof ListenError) || err.code !== 'EADDRINUSE') throw err;
    logger.warn(`metrics off: ${err.message}`);
    return null;
  }
}

/**
 * The SMTP listener on SMTP_PORT; null when that port is the default one and another process holds
 * it (another service on this machine): the service starts without mail over SMTP and says so (mail
 * forwarded over HTTP still arrives). A port set in SMTP_PORT that cannot be listened on stops the start.
 */
async function smtpListener(ctx: ServiceContext, config: Config, logger: Logger): Promise<SmtpListener | null> {
  try {
    return await startSmtpIntake(ctx, config.channels, config.host, logger);
  } catch (err) {
    const listenErr = listenError(err as NodeJS.ErrnoException, config.host, config.channels.smtpPort, 'SMTP_PORT');
    if (config.channels.smtpPortSet || listenErr.code !== 'EADDRINUSE') throw listenErr;
    logger.warn(`SMTP off: ${listenErr.message}`);
    return null;
  }
}

/** `server` listening on host:port, or the ListenError that names the variable to change. */
async function listening<S extends Server>(server: S, host: string, port: number, variable: string): Promise<S> {
  server.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenError(err, host, port, variable)));
  });
  return server;
}

function listenError(err: NodeJS.ErrnoException, host: string, port: number, variable: string): ListenError {
  const where = `${host}:${port}`;
  if (err.code === 'EADDRINUSE')
    return new ListenError(`cannot listen on ${where}: the address is in use (another process serves it; set ${variable} or HOST)`, err.code);
  if (err.code === 'EACCES')
    return new ListenError(`cannot listen on ${where}: permission denied (ports below 1024 need privileges; set ${variable})`, err.code);
  if (err.code === 'EADDRNOTAVAIL') return new ListenError(`cannot listen on ${where}: the address is not one of this machine's (set HOST)`, err.code);
  return new ListenError(`cannot listen on ${where}: ${err.message}`, err.code);
}
