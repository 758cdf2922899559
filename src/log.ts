// Structured JSON logs (pino). Tokens and secrets never reach a log line by construction: the
// service logs only fields it picks (request lines carry the path without its query string, with
// webhook paths masked), never headers or bodies; test/reliability checks it. (pino's `redact` was
// tried as a second net: it cost 11 % of the 401 path and caught nothing the fields could hold.)
import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'build-api' },
      timestamp: isoTime,
    },
    destination,
  );
}

/** The path as it may be logged: no query string, webhook secrets masked. */
export function loggablePath(url: string): string {
  const queryAt = url.indexOf('?');
  const path = queryAt < 0 ? url : url.slice(0, queryAt);
  return path.startsWith('/hooks/') ? path.replace(/^(\/hooks\/[^/]+\/)[^/]+/, '$1[redacted]') : path;
}

let lastMillis = 0;
let lastTime = '';
/** pino's isoTime, formatted once per millisecond (several lines share one under load). */
function isoTime(): string {
  const now = Date.now();
  if (now !== lastMillis) {
    lastMillis = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}
