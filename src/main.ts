// `build-api serve`: config → store → HTTP server, with graceful shutdown on SIGTERM/SIGINT
// (stop accepting, let requests in flight finish, close the database).
import type { Server } from 'node:http';
import { loadConfig, ConfigError, type Config } from './config';
import { createLogger } from './log';
import { createService } from './service';
import { createHttpServer } from './http/server';
import { AlreadyServingError } from './data-directory/serve-lock';
import { DataDirectoryError } from './data-directory/data-directory';

const SHUTDOWN_GRACE_MS = 10_000;

export async function serve(config: Config = loadConfig()): Promise<Server> {
  const logger = createLogger(config.logLevel);
  const service = await createService(config, logger);
  const server = createHttpServer(service.app, config.connections).listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  logger.info(
    {
      address: server.address(),
      // The PostgreSQL URL is not logged: it may carry a password.
      database: config.databaseUrl ? 'postgresql' : config.databasePath,
      issuer: config.auth.issuer ?? `${config.publicBaseUrl} (built-in)`,
      docs: `${config.publicBaseUrl}/docs`,
    },
    'build-api listening',
  );

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.warn('requests still running after the grace period; closing them');
      server.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    service.ctx.runEvents.stop(); // open event streams end now; their clients resume with Last-Event-ID
    server.close(() => {
      void service.close(SHUTDOWN_GRACE_MS).then(() => {
        logger.info('stopped');
        process.exit(0);
      });
    });
    server.closeIdleConnections();
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  return server;
}

/** A start-up refusal the operator can act on: one line on stderr, exit 1. Anything else is thrown on. */
export function exitOnConfigError(err: unknown): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`build-api: configuration error: ${err.message}\n`);
    process.exit(1);
  }
  if (err instanceof AlreadyServingError || err instanceof DataDirectoryError) {
    process.stderr.write(`build-api: ${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
