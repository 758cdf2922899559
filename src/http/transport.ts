// What every reply of the service goes through before its route: cross-origin requests (CORS, by
// the operator's allow-list) and compression (by the request's Accept-Encoding). Each layer costs a
// request nothing unless the request asks for it (an Origin, an Accept-Encoding): the API's hot
// paths are mostly called by servers that send neither.
import type { IncomingMessage, ServerResponse } from 'node:http';
import compression from 'compression';
import cors from 'cors';

type Layer = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/** Response fields a browser application may read (CORS hides all but a few without this). */
const EXPOSED = ['ETag', 'Location', 'Link', 'Retry-After', 'RateLimit', 'RateLimit-Policy', 'X-Request-Id', 'WWW-Authenticate'];
/** Request fields a browser application may send. */
const ALLOWED = [
  'Authorization',
  'Content-Type',
  'If-Match',
  'If-None-Match',
  'Idempotency-Key',
  'Last-Event-ID',
  'X-Request-Id',
  'Mcp-Protocol-Version',
  'Mcp-Session-Id',
];

/**
 * CORS for the origins of `allowed` (`*`: any). A preflight (OPTIONS with
 * Access-Control-Request-Method) is answered 204 here; a request from an origin not allowed gets no
 * CORS fields, so its browser withholds the reply. Bearer tokens, not cookies: no credentials mode.
 */
export function crossOrigin(allowed: string[] | '*'): Layer | null {
  if (allowed !== '*' && !allowed.length) return null;
  const layer = cors({
    origin: allowed === '*' ? '*' : allowed,
    methods: ['GET', 'HEAD', 'PUT', 'POST', 'DELETE'],
    allowedHeaders: ALLOWED,
    exposedHeaders: EXPOSED,
    maxAge: 600,
  }) as unknown as Layer;
  return (req, res, next) => (req.headers.origin === undefined ? next() : layer(req, res, next));
}

/** Replies smaller than this are sent as they are: compressing them saves less than it costs. */
export const COMPRESSION_THRESHOLD_BYTES = 1024;

/**
 * gzip, deflate or brotli as the request accepts, for replies of COMPRESSION_THRESHOLD_BYTES or more
 * (the docs page, tools/list, lists and runs). Event streams are never compressed: a compressor holds
 * bytes back until it has enough, and a stream's events must go out as they happen.
 */
export function compressing(): Layer {
  const layer = compression({
    threshold: COMPRESSION_THRESHOLD_BYTES,
    filter: (req, res) => !String(res.getHeader('Content-Type') ?? '').startsWith('text/event-stream') && compression.filter(req, res),
  }) as unknown as Layer;
  return (req, res, next) => (req.headers['accept-encoding'] === undefined ? next() : layer(req, res, next));
}
