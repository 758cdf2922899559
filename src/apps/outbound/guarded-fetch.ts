// The fetch an MCP client is given (the SDK's `fetch` option): every request held to the outbound
// address rule (lookup.ts) on every hop (the SDK follows a same-origin redirect by calling this
// again; this never follows one itself), under the session's deadline, and its answer read only
// up to a byte cap. Past the cap the body errors and the connection is closed: what was read is
// kept for the caller (`cut`), never more. A GET (the standalone stream a server may offer for its
// own notifications) is answered here with 405: a call's session is short, and opens none.
import http from 'node:http';
import https from 'node:https';
import { ToolError } from '../types';
import { refusedLiteral, vettedLookup } from './lookup';

export type FetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>;

export interface GuardedFetchOptions {
  allowPrivate: boolean;
  /** The most bytes one answer's body may have. */
  maxBytes: number;
  /** The session's deadline: aborts every request still open. */
  signal: AbortSignal;
}

/** An answer that passed the cap: its first `maxBytes` bytes. */
export class AnswerCut extends Error {
  constructor(readonly prefix: Buffer) {
    super(`the answer is larger than ${prefix.length} bytes`);
  }
}

export interface GuardedFetch {
  fetch: FetchLike;
  /** The prefix of the last answer that passed the cap, if one did. */
  readonly cut: AnswerCut | null;
  /** Closes every connection it holds. */
  close(): void;
}

const NO_BODY_STATUSES = new Set([101, 204, 205, 304]);

export function guardedFetch(opts: GuardedFetchOptions): GuardedFetch {
  // One connection at a time, kept alive between the session's requests (initialize, call, ...).
  const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 2 }), https: new https.Agent({ keepAlive: true, maxSockets: 2 }) };
  let cut: AnswerCut | null = null;
  const lookup = vettedLookup(opts.allowPrivate);

  const fetch: FetchLike = (input, init = {}) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(String(input));
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return reject(new ToolError(`only http and https servers are allowed, not ${url.protocol}`));
      const refused = refusedLiteral(url, opts.allowPrivate);
      if (refused) return reject(new ToolError(refused));
      const method = (init.method ?? 'GET').toUpperCase();
      if (method === 'GET') return resolve(new Response(null, { status: 405, statusText: 'No standalone stream' }));
      const signal = init.signal ? AbortSignal.any([opts.signal, init.signal]) : opts.signal;
      const secure = url.protocol === 'https:';
      const request = (secure ? https : http).request(
        url,
        { method, headers: Object.fromEntries(new Headers(init.headers)), lookup, signal, agent: secure ? agents.https : agents.http },
        (res) => resolve(responseOf(res, method, opts.maxBytes, (c) => (cut = c))),
      );
      request.on('error', reject);
      request.end(typeof init.body === 'string' ? init.body : init.body == null ? undefined : Buffer.from(init.body as ArrayBuffer));
    });

  return {
    fetch,
    get cut() {
      return cut;
    },
    close: () => {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/** The node response as a fetch Response whose body errors (and closes the connection) past `maxBytes`. */
function responseOf(res: http.IncomingMessage, method: string, maxBytes: number, onCut: (cut: AnswerCut) => void): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const status = res.statusCode ?? 502;
  if (method === 'HEAD' || NO_BODY_STATUSES.has(status)) {
    res.resume();
    return new Response(null, { status, statusText: res.statusMessage, headers });
  }
  let seen = 0;
  const kept: Buffer[] = [];
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      res.on('data', (chunk: Buffer) => {
        if (seen + chunk.length > maxBytes) {
          kept.push(chunk.subarray(0, maxBytes - seen));
          const prefix = new AnswerCut(Buffer.concat(kept));
          onCut(prefix);
          controller.error(prefix);
          res.destroy();
          return;
        }
        seen += chunk.length;
        kept.push(chunk);
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
      });
      res.on('end', () => controller.close());
      res.on('error', (err) => controller.error(err));
    },
    cancel() {
      res.destroy();
    },
  });
  return new Response(body, { status, statusText: res.statusMessage, headers });
}
