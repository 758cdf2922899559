// One short session with an app's MCP server, through the official client SDK: connect (the SDK
// negotiates the protocol version: a 2026-07-28 server's discovery, or a 2025 server's
// initialize), do one thing (list the tools, or call one), close. Everything it costs is bounded:
// one deadline for the whole session, every answer read through the guarded fetch (the outbound
// address rule, a byte cap), at most MAX_LIST_PAGES pages of tools. Every failure is an McpFailure
// whose message says what went wrong in words a user can act on; none escapes as anything else.
import crypto from 'node:crypto';
import { Client, StreamableHTTPClientTransport, UnauthorizedError, type PriorDiscovery } from '@modelcontextprotocol/client';
import type { ListedMcpTool } from '../../domain/apps';
import { CredentialsRefused, ToolError } from '../types';
import { type AnswerCut, guardedFetch, type GuardedFetch } from '../outbound/guarded-fetch';

/** Where and how to reach the server, and what a session may cost. */
export interface McpEndpoint {
  url: string;
  /** Sent with every request (a connection's credentials). */
  headers: Record<string, string>;
  timeoutMs: number;
  /** The most bytes one answer may have. */
  maxBytes: number;
  allowPrivate: boolean;
}

/** A session that failed; `refused`: because the credentials were refused (401 or 403, or the token endpoint's refusal). */
export class McpFailure extends Error {
  constructor(
    message: string,
    readonly refused = false,
  ) {
    super(message);
  }
}

/** Pages of `tools/list` read at most. */
export const MAX_LIST_PAGES = 20;

const CLIENT_INFO = { name: 'build-api', version: '1' };

/**
 * What each server was found to speak, by its URL and the credentials sent (the SDK's rule: reuse a
 * verdict only within one authorization context): a 2026-07-28 server's discovery (a later session
 * connects with no round trip) or a 2025 server's (a later session skips the probe). Held for a few
 * minutes, for the servers called lately.
 */
const priors = new Map<string, { prior: PriorDiscovery; until: number }>();
const PRIOR_MS = 5 * 60_000;
const PRIORS_HELD = 1000;

const priorKey = (endpoint: McpEndpoint) => crypto.hash('sha256', JSON.stringify([endpoint.url, endpoint.headers]), 'base64url');

function priorOf(key: string): PriorDiscovery | undefined {
  const held = priors.get(key);
  if (held && held.until > Date.now()) return held.prior;
  priors.delete(key);
  return undefined;
}

function remember(key: string, client: Client): void {
  const discover = client.getDiscoverResult();
  priors.delete(key);
  priors.set(key, { prior: discover ? { kind: 'modern', discover } : { kind: 'legacy' }, until: Date.now() + PRIOR_MS });
  if (priors.size > PRIORS_HELD) priors.delete(priors.keys().next().value as string);
}

export interface McpSession {
  client: Client;
  /** The options every request of the session takes (its deadline). */
  request: { signal: AbortSignal; timeout: number };
  /** The prefix of the last answer that passed the byte cap, if one did. */
  cut(): AnswerCut | null;
}

/** Runs `work` in a session with the server; closes it whatever happens. */
export async function withMcpSession<T>(endpoint: McpEndpoint, work: (session: McpSession) => Promise<T>): Promise<T> {
  const deadline = new AbortController();
  const late = new McpFailure(`the MCP server did not answer within ${endpoint.timeoutMs} ms`);
  const timer = setTimeout(() => deadline.abort(late), endpoint.timeoutMs);
  const guarded = guardedFetch({ allowPrivate: endpoint.allowPrivate, maxBytes: endpoint.maxBytes, signal: deadline.signal });
  const client = new Client(CLIENT_INFO, { versionNegotiation: { mode: 'auto' } });
  const request = { signal: deadline.signal, timeout: endpoint.timeoutMs };
  try {
    const transport = new StreamableHTTPClientTransport(new URL(endpoint.url), {
      fetch: guarded.fetch,
      requestInit: { headers: endpoint.headers },
      reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
    });
    const key = priorKey(endpoint);
    const prior = priorOf(key);
    try {
      await untilDeadline(client.connect(transport, { ...request, prior }), deadline.signal);
    } catch (err) {
      priors.delete(key); // the server may have changed: the next session asks again
      throw err;
    }
    if (!prior) remember(key, client);
    return await untilDeadline(work({ client, request, cut: () => guarded.cut }), deadline.signal);
  } catch (err) {
    throw failureOf(err, deadline.signal, guarded);
  } finally {
    clearTimeout(timer);
    deadline.abort(late);
    await client.close().catch(() => undefined);
    guarded.close();
  }
}

/** `work`, or the deadline's reason once it passes (a promise the SDK never settles cannot hold a caller). */
function untilDeadline<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

/** What went wrong, as an McpFailure a user can read. */
function failureOf(err: unknown, deadline: AbortSignal, guarded: GuardedFetch): McpFailure {
  if (err instanceof McpFailure) return err;
  if (deadline.aborted && deadline.reason instanceof McpFailure) return deadline.reason;
  if (guarded.cut) return new McpFailure(`the MCP server's answer is larger than ${guarded.cut.prefix.length} bytes, the most the app reads`);
  const chain = causes(err);
  const ours = chain.find((e) => e instanceof ToolError);
  if (ours) return new McpFailure(ours.message, ours instanceof CredentialsRefused);
  const status = chain.map((e) => (e as { status?: unknown }).status).find((s) => typeof s === 'number');
  if (status === 401 || status === 403 || chain.some((e) => UnauthorizedError.isInstance(e))) {
    return new McpFailure(`the MCP server refused the connection's credentials (${status ?? 401})`, true);
  }
  const message = chain
    .map((e) => (e instanceof Error ? e.message : String(e)))
    .filter(Boolean)
    .join(': ');
  return new McpFailure(`the MCP server could not be used: ${message.slice(0, 500) || 'unknown error'}`);
}

/** The error and the errors it was caused by, outermost first (at most a few). */
function causes(err: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e: unknown = err; e !== undefined && e !== null && chain.length < 5; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

/** Every tool the server lists, page by page: an McpFailure past `max` tools or MAX_LIST_PAGES pages. */
export async function listTools(session: McpSession, max: number): Promise<ListedMcpTool[]> {
  const tools: ListedMcpTool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const answer = await session.client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, session.request);
    tools.push(...(answer.tools as ListedMcpTool[]));
    if (tools.length > max) throw new McpFailure(`the MCP server lists more than ${max} tools, the most an app may have`);
    cursor = typeof answer.nextCursor === 'string' && answer.nextCursor ? answer.nextCursor : undefined;
    if (cursor === undefined) return tools;
  }
  throw new McpFailure(`the MCP server's tool list goes on past ${MAX_LIST_PAGES} pages, the most read`);
}

/** What the server said of itself. */
export function serverInfoOf(session: McpSession): { name: string; version: string; protocol_version: string } {
  const info = session.client.getServerVersion();
  return {
    name: String(info?.name ?? '').slice(0, 200),
    version: String(info?.version ?? '').slice(0, 100),
    protocol_version: String(session.client.getNegotiatedProtocolVersion() ?? '').slice(0, 40),
  };
}
