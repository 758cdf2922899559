// Structured JSON logs (pino). Tokens and secrets never reach a log line by construction: the
// service logs only fields it picks (request lines carry the path without its query string, with
// webhook paths masked), never headers or bodies; test/reliability checks it. (pino's `redact` is
// not used as a second net: it would add its cost to every line, the 401 path's included, and
// could catch nothing the picked fields can hold; docs/benchmarks.md.)
import pino, { type Logger } from 'pino';
import { activeSpanIds, tracingOn } from './tracing';

export type { Logger } from 'pino';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'build-api' },
      timestamp: isoTime,
      // With tracing on, a line written inside a span names it (trace_id, span_id), so a log search
      // finds the trace and a trace's spans find their lines.
      ...(tracingOn() && { mixin: () => activeSpanIds() ?? {} }),
    },
    destination,
  );
}

/** What a request's access line says (replies.ts logRequest). */
export interface AccessLine {
  reqId: string;
  method: string;
  path: string;
  status: number;
  ms: number;
  workspace: string | undefined;
}

const { streamSym, chindingsSym } = pino.symbols;

/**
 * Writes a request's access line: the line pino's `logger.info(fields, 'request')` writes, built
 * by hand. pino's serializer walks the object's keys and checks and escapes each value in turn, a
 * few microseconds that every request paid (docs/benchmarks.md, issue 41); here the line is one
 * template, the strings a request controls (its path, the token's workspace) escaped by
 * JSON.stringify. With tracing on, pino writes it (its mixin adds the span's ids). The unit test
 * compares the two lines, so a pino that changes its format fails it.
 */
export function logAccess(logger: Logger, line: AccessLine): void {
  if (!logger.isLevelEnabled('info')) return;
  if (tracingOn()) {
    logger.info(line, 'request');
    return;
  }
  const internals = logger as unknown as Record<symbol, unknown>;
  const workspace = line.workspace === undefined ? '' : `,"workspace":${JSON.stringify(line.workspace)}`;
  (internals[streamSym] as { write(text: string): void }).write(
    `{"level":30${isoTime()}${internals[chindingsSym] as string},"reqId":${JSON.stringify(line.reqId)},"method":${JSON.stringify(line.method)},"path":${JSON.stringify(line.path)},"status":${line.status},"ms":${line.ms}${workspace},"msg":"request"}\n`,
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path segment percent-decoded; as it is when it is not valid percent-encoding (it then names nothing). */
export function decodedSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * The path as it may be logged (or echoed in a 404): no query string, and after a `hooks` segment
 * (however spelled: `//hooks`, `/HOOKS`, `/%68ooks`) every segment but a trigger id (a UUID) masked,
 * wherever the sender put the secret (`/hooks/<id>//<secret>` and the like).
 */
export function loggablePath(url: string): string {
  const queryAt = url.indexOf('?');
  const path = queryAt < 0 ? url : url.slice(0, queryAt);
  // A segment that reads `hooks` is spelled with those letters or percent-encoded: a path with
  // neither (every API request's) is returned without being split and decoded segment by segment.
  if (!path.includes('%') && !path.toLowerCase().includes('hooks')) return path;
  const segments = path.split('/');
  const hooks = segments.findIndex((s) => decodedSegment(s).toLowerCase() === 'hooks');
  if (hooks < 0) return path;
  return segments.map((s, i) => (i <= hooks || s === '' || UUID.test(s) ? s : '[redacted]')).join('/');
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
