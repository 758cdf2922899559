// Writing replies and access-log lines, shared by the API's layer and the webhook receiver's.
import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import { ApiError } from '../errors';
import { logAccess, loggablePath, type Logger } from '../log';
import type { Metrics } from '../metrics';
import { BODY_LIMIT_BYTES } from './body';

/**
 * Writes a JSON reply with node's own response methods: express's res.send would look for a
 * charset, compute freshness against If-None-Match (answering an undocumented 304) and check the
 * method again — none of which an API reply needs, and all of which every reply would pay for.
 */
export function sendJson(res: Response, status: number, headers: Record<string, string> | undefined, bytes: Buffer): void {
  res.statusCode = status;
  if (headers) for (const name in headers) res.setHeader(name, headers[name] as string);
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', bytes.length);
  res.end(bytes);
  if (!res.req.complete && hasBody(res.req)) closeIfBodyStalls(res.req);
}

/** A reply without a body (204). */
/** A plain-text reply (Meta's subscription check is answered with its challenge as text). */
export function sendText(res: Response, status: number, text: string): void {
  const bytes = Buffer.from(text);
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/plain');
  res.setHeader('Content-Length', bytes.length);
  res.end(bytes);
}

export function sendEmpty(res: Response, status: number, headers: Record<string, string> | undefined): void {
  res.statusCode = status;
  if (headers) for (const name in headers) res.setHeader(name, headers[name] as string);
  res.end();
}

/** How long the rest of a body may take to arrive once its request has been answered. */
export const UNREAD_BODY_MS = 10_000;

/**
 * Whether a request has a body to read (RFC 9112 §6.3: one without Content-Length or
 * Transfer-Encoding has none). A reply sent synchronously, as a 401 is, comes before node has
 * marked even a bodiless request complete: its end arrives in the same read, with nothing to wait for.
 */
function hasBody(req: Response['req']): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * A request answered before its body arrived (401, 404, 413 …): node reads and drops the rest to
 * keep the connection, waiting up to its keep-alive time (65 s) with neither the request nor the
 * idle timeout counting. A body that stops for good would hold the connection that long: it is
 * closed once UNREAD_BODY_MS pass without the body's end. Whichever comes first — the body's end,
 * the connection's close, the deadline — removes the other two: a keep-alive connection carries
 * many requests, and nothing of one may outlive it on the socket.
 */
function closeIfBodyStalls(req: Response['req']): void {
  const socket = req.socket;
  const settle = () => {
    clearTimeout(timer);
    req.removeListener('end', settle); // (not 'close': node emits it as the reply finishes)
    socket.removeListener('close', settle);
  };
  const timer = setTimeout(() => {
    settle();
    socket.destroy();
  }, UNREAD_BODY_MS);
  timer.unref();
  req.once('end', settle);
  socket.once('close', settle);
}

/** An ApiError as the API's error body; anything else is logged and answered as a 500 that names the request id. */
export function replyWithError(err: unknown, req: Request, res: Response, logger: Logger): void {
  let error: ApiError;
  if (err instanceof ApiError) error = err;
  else if (isHttpError(err) && err.status < 500) {
    // body-parser and friends: sizes and encodings the request got wrong.
    error = err.status === 413 ? new ApiError(413, `body is over the ${BODY_LIMIT_BYTES}-byte limit`) : new ApiError(err.status, `body: ${err.message}`);
  } else {
    logger.error({ err, reqId: req.id, method: req.method, path: loggablePath(req.originalUrl) }, 'unexpected failure');
    error = new ApiError(500, `internal error (request id ${req.id})`);
  }
  if (res.headersSent) {
    res.end();
    return;
  }
  // A refusal is an answer to this request at this moment (a 404 is heuristically cacheable otherwise).
  res.setHeader('Cache-Control', 'no-store');
  sendJson(res, error.status, error.headers, error.encoded());
}

function isHttpError(err: unknown): err is { status: number; message: string } {
  return !!err && typeof err === 'object' && typeof (err as { status?: unknown }).status === 'number';
}

/** Gives a request its id (the caller's X-Request-Id when usable) and notes when it arrived. */
export function identify(req: Request, res: Response): void {
  req.startedAt = performance.now();
  const given = req.headers['x-request-id'];
  req.id = (typeof given === 'string' && /^[\w.-]{1,100}$/.test(given) && given) || crypto.randomUUID();
  res.setHeader('X-Request-Id', req.id);
}

/**
 * The access-log line of a request (no query string, no headers, no body: see log.ts), and its
 * count and duration in the metrics, by operationId (`operation` names requests no operation of
 * the spec answers: `mcp`, `unmatched`, `other`).
 */
export function logRequest(logger: Logger, req: Request, res: Response, metrics: Metrics, operation?: string): void {
  const ms = performance.now() - (req.startedAt as number);
  metrics.httpRequest(req.matched?.operation.operationId ?? operation ?? 'other', res.statusCode, ms / 1000);
  logAccess(logger, {
    reqId: req.id as string,
    method: req.method,
    path: loggablePath(req.originalUrl),
    status: res.statusCode,
    ms,
    workspace: req.principal?.workspaceId,
  });
}
