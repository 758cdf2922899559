// Structured JSON logs (pino). Tokens and secrets never reach a log line: request lines carry the
// path without its query string, webhook paths are masked, and any header that could hold a
// credential is redacted should a caller ever log one.
import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'build-api' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', 'secret', '*.secret', '*.token'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

/** The path as it may be logged: no query string, webhook secrets masked. */
export function loggablePath(url: string): string {
  const path = url.split('?', 1)[0] ?? '';
  return path.replace(/^(\/hooks\/[^/]+\/)[^/]+/, '$1[redacted]');
}
