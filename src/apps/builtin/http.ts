// The http app. Requests go only where the outbound address rule allows (outbound/lookup.ts: the
// address a name resolves to is vetted, and connected to as vetted). Redirects are followed (a few), each hop vetted the same way.
// The whole exchange, every hop included, has one deadline and one size cap: node's `timeout` is an
// idle timeout, which a server sending a byte now and then would never trip.
import http from 'node:http';
import https from 'node:https';
import { NOT_JSON, parseJsonWithin } from '../../domain/json-limits';
import { refusedLiteral, vettedLookup } from '../outbound/lookup';
import { objectOf, tool, ToolError, type AppModule, type HttpToolOptions } from '../types';
import { injectTraceContext } from '../../tracing';

/** Redirects followed at most; the response to the next one is returned as it is. */
export const MAX_REDIRECTS = 5;

interface RequestArgs {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

function parseUrl(text: string, allowPrivate: boolean): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ToolError(`url: '${text}' is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ToolError(`url: only http and https are allowed, not ${url.protocol}`);
  const refused = refusedLiteral(url, allowPrivate);
  if (refused) throw new ToolError(refused);
  return url;
}

/** What one hop sends. */
export interface Hop {
  url: URL;
  method: string;
  headers: Record<string, string>;
  payload: Buffer | undefined;
}

/** What every hop shares: the deadline's signal and the bytes left of the exchange's cap. */
interface Exchange {
  signal: AbortSignal;
  bytesLeft: number;
  options: HttpToolOptions;
}

function firstHop(args: RequestArgs, options: HttpToolOptions): Hop {
  const url = parseUrl(args.url, options.allowPrivate);
  const headers: Record<string, string> = { ...(args.headers ?? {}) };
  // The run's trace goes on to the service called (W3C traceparent), unless the call names its own.
  if (!Object.keys(headers).some((h) => /^(traceparent|tracestate)$/i.test(h))) injectTraceContext(headers);
  let payload: Buffer | undefined;
  if (args.body !== undefined && args.body !== null) {
    payload = Buffer.from(typeof args.body === 'string' ? args.body : JSON.stringify(args.body));
    if (payload.length > options.maxBytes)
      throw new ToolError(`body: the request body is ${payload.length} bytes; the limit of an exchange is ${options.maxBytes}`);
    if (typeof args.body !== 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    headers['content-length'] = String(payload.length);
  }
  return { url, method: args.method, headers, payload };
}

/** The hop a redirect asks for, as browsers and fetch make it; null when the response is not a redirect to follow. */
export function nextHop(hop: Hop, status: number, location: string | undefined, allowPrivate: boolean): Hop | null {
  if (![301, 302, 303, 307, 308].includes(status) || !location) return null;
  let target: URL;
  try {
    target = new URL(location, hop.url);
  } catch {
    return null; // a Location that is no URL: the 3xx is the answer
  }
  const url = parseUrl(target.href, allowPrivate);
  let { method, payload } = hop;
  const headers = { ...hop.headers };
  // 303, and 301/302 after a POST, turn into a GET without a body; 307 and 308 repeat the request.
  if (status === 303 ? method !== 'HEAD' : [301, 302].includes(status) && method === 'POST') {
    method = 'GET';
    payload = undefined;
    for (const name of Object.keys(headers)) if (/^(content-type|content-length)$/i.test(name)) delete headers[name];
  }
  // Credentials are for the origin they were given to.
  if (url.origin !== hop.url.origin)
    for (const name of Object.keys(headers)) if (/^(authorization|cookie|proxy-authorization)$/i.test(name)) delete headers[name];
  return { url, method, headers, payload };
}

function send(hop: Hop, exchange: Exchange): Promise<{ status: number; headers: http.IncomingHttpHeaders; rawHeaders: string[]; body: Buffer }> {
  const { options } = exchange;
  const client = hop.url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const fail = (err: Error) => reject(err instanceof ToolError ? err : new ToolError(`request failed: ${err.message}`));
    const req = client.request(
      hop.url,
      { method: hop.method, headers: hop.headers, lookup: vettedLookup(options.allowPrivate), signal: exchange.signal },
      (res) => {
        const chunks: Buffer[] = [];
        // The status line and headers count against the cap too.
        exchange.bytesLeft -= res.rawHeaders.reduce((n, h) => n + Buffer.byteLength(h) + 2, 0);
        const over = () => new ToolError(`the exchange is over ${options.maxBytes} bytes`);
        if (exchange.bytesLeft < 0) return req.destroy(over());
        res.on('data', (chunk: Buffer) => {
          exchange.bytesLeft -= chunk.length;
          if (exchange.bytesLeft < 0) return req.destroy(over());
          chunks.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }));
        res.on('error', fail);
      },
    );
    req.on('error', fail);
    req.end(hop.payload);
  });
}

function decode(status: number, headers: http.IncomingHttpHeaders, raw: Buffer): HttpResponse {
  const text = raw.toString('utf8');
  let body: unknown = text;
  if (/\bjson\b/i.test(String(headers['content-type'] ?? '')) && text) {
    // Not JSON after all, or nested deeper than any request may be: keep the text.
    const parsed = parseJsonWithin(text);
    if (parsed !== NOT_JSON) body = parsed;
  }
  const flat = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]));
  return { status, headers: flat, body };
}

export async function httpRequest(args: RequestArgs, options: HttpToolOptions): Promise<HttpResponse> {
  let hop: Hop | null = firstHop(args, options);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new ToolError(`no complete response within ${options.timeoutMs} ms`)), options.timeoutMs);
  const exchange: Exchange = { signal: deadline.signal, bytesLeft: options.maxBytes - (hop.payload?.length ?? 0), options };
  try {
    for (let redirects = 0; ; redirects++) {
      const res = await send(hop, exchange);
      const location = res.headers.location;
      const next: Hop | null = redirects < MAX_REDIRECTS ? nextHop(hop, res.status, location, options.allowPrivate) : null;
      if (!next) return decode(res.status, res.headers, res.body);
      hop = next;
    }
  } catch (err) {
    // An abort rejects with the signal's reason (our ToolError) or a generic AbortError.
    if (deadline.signal.aborted) throw deadline.signal.reason as ToolError;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

export const httpApp: AppModule = {
  slug: 'http',
  name: 'HTTP',
  description: 'Outbound HTTP requests to public addresses.',
  tools: [
    tool(
      'http.request',
      'Request',
      `Sends an HTTP request to a public address (following up to ${MAX_REDIRECTS} redirects, each to a public address; 10 s and 1 MiB for the whole exchange) and returns the status, headers and body of the last response.`,
      'write',
      objectOf(
        {
          method: { type: 'string', enum: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] },
          url: { type: 'string', minLength: 1, maxLength: 2000 },
          headers: { type: 'object', additionalProperties: { type: 'string' } },
          body: {},
        },
        ['method', 'url'],
      ),
      async (args, ctx) => httpRequest(args as unknown as RequestArgs, ctx.http),
    ),
  ],
};
