// The HTTP server for the express app. Express gives every request and response its app's
// prototypes (`app.request`, `app.response`) with Object.setPrototypeOf as they enter the app; an
// object whose prototype changes after it was built leaves V8's fast paths, and node's own HTTP code
// then runs several times slower on every request and response (expressjs/express#5998;
// docs/benchmarks.md). This server has node build them with those prototypes from the start, so express's
// setPrototypeOf finds the prototype already in place and changes nothing. They are the objects
// express would have made: node's IncomingMessage and ServerResponse under the app's prototypes.
import http from 'node:http';
import type { Socket } from 'node:net';
import type express from 'express';

type Construct = (this: unknown, ...args: unknown[]) => void;

/**
 * Request and response constructors whose instances have the app's prototypes. Plain functions,
 * not classes (a class's `prototype` cannot be replaced), that run node's constructors on `this`.
 * Null if node's constructors are classes, which cannot be called so: they are functions in node 20
 * (where this is tested); a node that made them classes would get express's default.
 */
export function appMessageClasses(app: express.Express): { IncomingMessage: typeof http.IncomingMessage; ServerResponse: typeof http.ServerResponse } | null {
  const isClass = (fn: unknown) => Function.prototype.toString.call(fn).startsWith('class');
  if (isClass(http.IncomingMessage) || isClass(http.ServerResponse)) return null;
  const incomingMessage = http.IncomingMessage as unknown as Construct;
  const serverResponse = http.ServerResponse as unknown as Construct;
  function AppRequest(this: unknown, socket: Socket) {
    incomingMessage.call(this, socket);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: unknown, req: http.IncomingMessage, options?: unknown) {
    serverResponse.call(this, req, options);
  }
  AppResponse.prototype = app.response;
  return {
    IncomingMessage: AppRequest as unknown as typeof http.IncomingMessage,
    ServerResponse: AppResponse as unknown as typeof http.ServerResponse,
  };
}

/**
 * How long an idle keep-alive connection stays open: longer than the 60 s idle timeout of common load
 * balancers (AWS ALB, nginx), so the balancer, not this server, closes it.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** What one connection may hold of the server, and how many there may be. */
export interface ConnectionLimits {
  /** Open connections at most; beyond, node closes a new connection at once (HTTP_MAX_CONNECTIONS). */
  maxConnections: number;
  /** How long a request may take to arrive, headers and body; then 408 and the connection closes (HTTP_REQUEST_TIMEOUT_SECONDS). */
  requestTimeoutMs: number;
  /** How long a connection may be silent both ways, between or inside exchanges (HTTP_IDLE_TIMEOUT_SECONDS). */
  idleTimeoutMs: number;
}

export const DEFAULT_CONNECTION_LIMITS: Readonly<ConnectionLimits> = Object.freeze({ maxConnections: 1000, requestTimeoutMs: 30_000, idleTimeoutMs: 120_000 });

/** How often node looks for requests past their time (its default, 30 s, let one run a minute). */
const TIMEOUT_CHECK_MS = 1000;

export function createHttpServer(app: express.Express, limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS): http.Server {
  const classes = appMessageClasses(app);
  // node measures headersTimeout on an idle keep-alive connection too: shorter than the keep-alive
  // time, a connection idle between the two is answered 408 and closed as the client reuses it
  // (nodejs/node#58140). It must exceed keepAliveTimeout. A request's headers are bounded by
  // requestTimeout instead, which node starts at the request's first byte (a slow sender of
  // headers or body is answered 408 then).
  const options = { connectionsCheckingInterval: TIMEOUT_CHECK_MS, requestTimeout: limits.requestTimeoutMs, ...(classes ?? {}) };
  const server = http.createServer(options, app);
  return Object.assign(server, {
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    headersTimeout: KEEP_ALIVE_TIMEOUT_MS + 1000,
    maxConnections: limits.maxConnections,
    // Silence both ways: a client that stops reading its stream, or never finishes its request.
    timeout: limits.idleTimeoutMs,
  });
}
