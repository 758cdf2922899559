// Builds the HTTP application from its parts. The order of checks under /api/build is the one
// docs/errors.md documents: route (404/405), Accept (406), token (401/503), scope (403), quota (429),
// body size (413), media type (415), JSON (400), schema (400/428) — none of which reads stored data — then the handler, which asks
// the store (404, 409, 400 against the stored document).
import fs from 'node:fs';
import path from 'node:path';
import querystring from 'node:querystring';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Operation } from 'openapi-backend';
import { ApiError } from '../errors';
import type { Logger } from '../log';
import type { Metrics } from '../metrics';
import { loggablePath } from '../log';
import type { Principal, ServiceContext } from '../services/context';
import type { Store } from '../store/port';
import { BUILD_SCOPE, type Authenticate } from '../auth/bearer';
import type { Jwks } from '../auth/local-issuer';
import { generatedDocsDir } from '../paths';
import { readJsonBody, takesBody } from './body';
import { cacheControlOf, digestedRead, digestTag, matchesNoneMatch } from './caching';
import { notAcceptable, producedMediaTypes } from './media-types';
import { compressing, crossOrigin } from './transport';
import { replyBytes, replyTo } from './calls';
import { admitWithinQuota } from './rate-limit-fields';
import { inServerSpan } from './tracing';
import { identify, logRequest, replyWithError, sendEmpty, sendJson } from './replies';
import { webhookRequests } from './webhooks';
import { handlers } from './handlers';
import { contractViolation, createOperations, type Match, type Operations, type Reply } from './openapi';
import { loadSpec } from './spec';

export interface AppOptions {
  ctx: ServiceContext;
  store: Store;
  logger: Logger;
  publicBaseUrl: string;
  /** The issuer tokens must come from, named in the protected-resource metadata. */
  issuer: string;
  /** Verifies the bearer token (see auth/bearer.ts). */
  authenticate: Authenticate;
  /** The embedded issuer's public keys, served at /.well-known/jwks.json when it is in use. */
  localJwks?: Jwks;
  /** Check every reply against the spec and answer 500 on drift (tests). */
  validateResponses?: boolean;
  /** Whether the process is draining (SIGTERM): /readyz then answers 503 so that balancers stop sending to it. */
  readiness?: Readiness;
  /** The origins whose browser applications may call the service (CORS); none by default. */
  corsAllowedOrigins?: string[] | '*';
  /** Requests served beside the API by another carrier of its operations (the MCP endpoint): given them, it answers its own paths and passes the rest on. */
  beside?: (operations: Operations) => express.RequestHandler;
}

type Matched = Extract<Match, { operation: Operation }>;

/** Set by the composition root when a shutdown begins. */
export interface Readiness {
  draining: boolean;
}

declare module 'express-serve-static-core' {
  interface Request {
    id?: string;
    /** The operation and path parameters the request was routed to. */
    matched?: Matched;
    /** performance.now() when the request reached the app (for the access log). */
    startedAt?: number;
  }
}

export async function createApp(opts: AppOptions): Promise<express.Express> {
  const spec = loadSpec();
  const operations = await createOperations(spec, handlers, opts.ctx);
  const app = express();
  app.set('etag', false);
  app.set('x-powered-by', false);
  app.set('query parser', 'simple');
  // JSON is UTF-8 by definition (RFC 8259): answer `application/json` without a charset parameter,
  // exactly the media type the spec declares, so contract tools compare like with like.
  app.response.json = function json(this: Response, body: unknown) {
    this.setHeader('Content-Type', 'application/json');
    return this.send(Buffer.from(JSON.stringify(body)));
  };

  app.use(webhookRequests(operations, opts.ctx, opts.logger));
  if (opts.beside) app.use(opts.beside(operations));
  app.use(otherRequests(opts.logger, opts.ctx.metrics));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    if (opts.readiness?.draining) {
      res.status(503).json({ error: 'draining: this replica is shutting down; send requests to another' });
      return;
    }
    try {
      await opts.store.ping();
      res.json({ status: 'ready' });
    } catch {
      res.status(503).json({ error: 'the store is not reachable' });
    }
  });
  const resourceMetadata = {
    resource: opts.publicBaseUrl,
    authorization_servers: [opts.issuer],
    scopes_supported: [BUILD_SCOPE],
    bearer_methods_supported: ['header'],
    resource_documentation: `${opts.publicBaseUrl}/docs`,
  };
  app.get('/.well-known/oauth-protected-resource', (_req, res) => {
    res.json(resourceMetadata);
  });
  if (opts.localJwks) {
    const jwks = opts.localJwks;
    app.get('/.well-known/jwks.json', (_req, res) => {
      res.json(jwks);
    });
  }
  app.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').send(spec.text);
  });
  mountDocs(app);

  app.use((req: Request, _res: Response, next: NextFunction) => {
    next(new ApiError(404, `no route ${req.method} ${loggablePath(req.originalUrl)}; the API is described at /openapi.yaml`));
  });
  app.use(errorHandler(opts.logger));
  const api = apiRequests(operations, producedMediaTypes(spec), opts.authenticate, opts.logger, opts.ctx);
  return apiFirst(app, api, opts.validateResponses ? contractCheck(operations) : null, opts.corsAllowedOrigins ?? []);
}

/** Whether a request's URL is under the API's root (`/api/build`, then `/`, `?` or nothing). */
function isApiUrl(url: string): boolean {
  return url.startsWith(API_ROOT) && (url.length === API_ROOT.length || url[API_ROOT.length] === '/' || url[API_ROOT.length] === '?');
}

/**
 * The app as the server calls it: CORS and compression first (transport.ts), for every request;
 * then an API request goes straight to the API's layer, anything else to express's router. The API
 * is most of the traffic, and express's app and router cost every request a walk of their own
 * before its first layer runs (docs/benchmarks.md). Requests and responses already have the app's
 * prototypes (server.ts), and the API's layer uses node's own response methods; `originalUrl` is
 * set as express's router would. The function has the app as its prototype, so it is the app to
 * everything else (its settings, `request`, `response`).
 */
function apiFirst(
  app: express.Express,
  api: (req: Request, res: Response) => void,
  contract: express.RequestHandler | null,
  corsOrigins: string[] | '*',
): express.Express {
  const cors = crossOrigin(corsOrigins);
  const compress = compressing();
  const route = (req: Request, res: Response) => {
    if (!isApiUrl(req.url)) return app(req, res);
    req.originalUrl = req.url;
    // After compression's layer, so that the check reads the reply before it is compressed.
    if (contract) contract(req, res, () => undefined);
    api(req, res);
  };
  const compressed = (req: Request, res: Response) => compress(req, res, () => route(req, res));
  const front = (req: Request, res: Response) => (cors ? cors(req, res, () => compressed(req, res)) : compressed(req, res));
  Object.setPrototypeOf(front, app);
  return front as unknown as express.Express;
}

function send(req: Request, res: Response, route: Matched, reply: Reply): void {
  if ('stream' in reply) {
    if (req.method === 'HEAD') headOfStream(res, reply);
    else openStream(res, reply);
    return;
  }
  if ('noContent' in reply) {
    sendEmpty(res, reply.status, reply.headers);
    return;
  }
  const bytes = replyBytes(reply);
  if (reply.status === 200 && (req.method === 'GET' || req.method === 'HEAD')) {
    const operationId = route.operation.operationId as string;
    res.setHeader('Cache-Control', cacheControlOf(req.method, operationId, route.params));
    let etag = reply.headers?.ETag;
    if (etag === undefined && digestedRead(operationId)) res.setHeader('ETag', (etag = digestTag(bytes)));
    if (etag !== undefined && matchesNoneMatch(req.headers['if-none-match'], etag)) {
      sendEmpty(res, 304, reply.headers);
      return;
    }
  } else res.setHeader('Cache-Control', 'no-store');
  sendJson(res, reply.status, reply.headers, bytes);
}

/** An event stream's status and fields: proxies neither buffer nor cache it. */
function streamHeaders(res: Response, reply: Extract<Reply, { stream: unknown }>): void {
  res.statusCode = reply.status;
  res.setHeader('Content-Type', 'text/event-stream');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('X-Accel-Buffering', 'no');
  for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
}

/** HEAD of an event stream: the stream's fields, no events (the stream starts and stops at once, releasing its slot). */
function headOfStream(res: Response, reply: Extract<Reply, { stream: unknown }>): void {
  streamHeaders(res, reply);
  res.end();
  reply.stream({ write: () => undefined, end: () => undefined, closed: Promise.resolve() });
}

/**
 * An event stream: its headers sent at once, then whatever the stream writes. `closed` settles when the client leaves or the stream ends.
 */
function openStream(res: Response, reply: Extract<Reply, { stream: unknown }>): void {
  streamHeaders(res, reply);
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
  reply.stream({
    write: (chunk) => {
      if (!res.writableEnded) res.write(chunk);
    },
    end: () => {
      if (!res.writableEnded) res.end();
    },
    closed,
  });
}

const API_ROOT = '/api/build';

/**
 * Every request under /api/build, handed over by apiFirst without express's router: the operation
 * first, so unknown paths are 404 and wrong methods 405; then the token; then the body, the
 * request's validation and the handler (operations.dispatch).
 */
function apiRequests(
  operations: Operations,
  produced: Map<string, string[]>,
  authenticate: Authenticate,
  logger: Logger,
  ctx: ServiceContext,
): (req: Request, res: Response) => void {
  // Errors are answered here: passing them to next() makes express's router walk every later layer
  // looking for an error handler, on every refusal. Each reply is logged as it is written, rather
  // than by a 'finish' listener on every response, which would add a listener and an event to
  // every request (docs/benchmarks.md).
  const fail = (req: Request, res: Response) => (err: unknown) => {
    replyWithError(err, req, res, logger);
    logRequest(logger, req, res, ctx.metrics, 'unmatched');
  };
  const answer = async (req: Request, res: Response, route: Matched, path: string, query: Record<string, unknown>, principal: Principal) => {
    const quota = admitWithinQuota(ctx, res, principal, route.operation.operationId as string);
    if (quota) await quota; // only when this process takes more units from the store
    const body = takesBody(route.operation) ? await readJsonBody(req, route.operation) : undefined;
    send(req, res, route, await replyTo(operations, ctx, route, { method: req.method, path, headers: req.headers, query, body }, principal));
    logRequest(logger, req, res, ctx.metrics);
  };
  const serve = (req: Request, res: Response) => {
    const url = req.originalUrl;
    identify(req, res);
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const match = operations.match(req.method, path);
    if (!match || !('operation' in match)) {
      if (match && req.method === 'OPTIONS') return answerOptions(req, res, match.allowed);
      return fail(req, res)(routingError(req.method, path, match?.allowed ?? [], res));
    }
    const unacceptable = notAcceptable(req, produced.get(match.operation.operationId as string) as string[]);
    if (unacceptable) return fail(req, res)(unacceptable);
    req.matched = match;
    inServerSpan(req, res, match.operation.operationId as string, match.operation.path, () => {
      // Parsed once, as express's 'simple' query parser would (its req.query getter parses on every read).
      const query = queryAt < 0 ? {} : { ...querystring.parse(url.slice(queryAt + 1)) };
      let principal: Principal | ApiError | Promise<Principal>;
      try {
        principal = authenticate(req, res, query);
      } catch (err) {
        return fail(req, res)(err);
      }
      if (principal instanceof ApiError) return fail(req, res)(principal);
      const principalKnown = (who: Principal) => {
        req.principal = who;
        return answer(req, res, match, path, query, who);
      };
      if (principal instanceof Promise) principal.then(principalKnown).catch(fail(req, res));
      else principalKnown(principal).catch(fail(req, res));
    });
  };
  /** OPTIONS (RFC 9110 §9.3.7): the methods of the path. A CORS preflight never gets here (transport.ts). */
  const answerOptions = (req: Request, res: Response, allowed: string[]) => {
    res.setHeader('Allow', allowed.join(', '));
    sendEmpty(res, 204, undefined);
    logRequest(logger, req, res, ctx.metrics, 'unmatched');
  };
  // No router around this layer (apiFirst) to catch what it throws: a throw is answered here.
  return (req, res) => {
    try {
      serve(req, res);
    } catch (err) {
      fail(req, res)(err);
    }
  };
}

function routingError(method: string, path: string, allowed: string[], res: Response): ApiError {
  if (!allowed.length) return new ApiError(404, `no route ${method} ${loggablePath(path)}; the API is described at /openapi.yaml`);
  res.setHeader('Allow', allowed.join(', '));
  return new ApiError(405, `method ${method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`);
}

function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => replyWithError(err, req, res, logger);
}

/** Requests outside the API (docs, probes, metadata, 404s): identified, and logged when their response is finished. */
function otherRequests(logger: Logger, metrics: Metrics): express.RequestHandler {
  return (req, res, next) => {
    identify(req, res);
    res.once('finish', () => logRequest(logger, req, res, metrics));
    next();
  };
}

/** The Redoc page built by `npm run generate:docs` (self-contained: no CDN needed to view it). */
function mountDocs(app: express.Express): void {
  const page = path.join(generatedDocsDir, 'index.html');
  app.get(['/docs', '/docs/'], (_req, res) => {
    if (!fs.existsSync(page)) {
      res.status(404).json({ error: 'the docs are not built; run npm run generate:docs' });
      return;
    }
    res.type('html').sendFile(page);
  });
}

/**
 * Test mode: every reply under /api/build is checked against the operation's documented responses;
 * a reply the spec does not describe becomes a 500 that says why.
 */
function contractCheck({ api }: Operations): express.RequestHandler {
  return (req, res, next) => {
    // Every JSON reply ends in res.end with its bytes (sendJson, and express's res.send under res.json).
    const end = res.end.bind(res) as (chunk?: unknown) => Response;
    res.end = ((payload?: unknown) => {
      const operation = req.matched?.operation;
      if (operation && Buffer.isBuffer(payload) && String(res.getHeader('content-type')).startsWith('application/json')) {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.getHeaders())) headers[name] = String(value);
        const problem = contractViolation(api, operation, { status: res.statusCode, body: JSON.parse(payload.toString('utf8')), headers });
        if (problem) {
          const bytes = Buffer.from(JSON.stringify({ error: `reply breaks the contract of ${operation.operationId}: ${problem}` }));
          res.statusCode = 500;
          res.setHeader('Content-Length', bytes.length);
          return end(bytes);
        }
      }
      return end(payload);
    }) as Response['end'];
    next();
  };
}
