// A request's server span (src/tracing.ts): named by its operation, a child of the caller's W3C
// `traceparent` when it sends one, active while the request is served (so the spans of the store
// calls, runs queued and outgoing calls made for it are its children), and ended with the response.
import type { Request, Response } from 'express';
import { loggablePath } from '../log';
import { contextFromHeaders, SpanKind, SpanStatusCode, startSpan, tracingOn, withSpan } from '../tracing';

/** Runs `serve` inside the request's server span named `name`; `route` is the path template (`/api/build/agents/{ref}`). */
export function inServerSpan(req: Request, res: Response, name: string, route: string, serve: () => void): void {
  if (!tracingOn()) {
    serve();
    return;
  }
  const parent = contextFromHeaders(req.headers);
  const span = startSpan(name, parent, {
    kind: SpanKind.SERVER,
    attributes: { 'http.request.method': req.method, 'http.route': route, 'url.path': loggablePath(req.originalUrl) },
  });
  res.once('close', () => {
    span.setAttribute('http.response.status_code', res.statusCode);
    // A 5xx is the service's failure; a 4xx is the caller's, and leaves the span unset (OpenTelemetry's HTTP conventions).
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
  withSpan(parent, span, serve);
}
