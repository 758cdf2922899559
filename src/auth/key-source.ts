// Where verification keys come from. The embedded issuer hands its JWKS over directly; an external
// issuer's JWKS is fetched (after discovery when only AUTH_ISSUER is set), cached, and fetched again
// when it is older than the cache lifetime or a token names an unknown key id (the issuer rotated
// its keys). When keys cannot be had at all the caller learns it as IssuerUnavailableError (a 503),
// never as a bad token; the next request after the issuer comes back recovers by itself.
import type { Jwks } from './local-issuer';
import { trimEnd } from '../domain/text';

export class IssuerUnavailableError extends Error {}

export interface KeySource {
  /** The key set to verify a token whose header names `kid`. */
  keysFor(kid: string | undefined): Promise<Jwks>;
}

export function staticKeySource(jwks: Jwks): KeySource {
  return { keysFor: async () => jwks };
}

export interface RemoteKeySourceOptions {
  issuer: string;
  jwksUri: string | null;
  timeoutMs?: number;
  /** How long a fetched key set is used before it is fetched again. */
  maxAgeMs?: number;
  /**
   * The least time between two fetches prompted by unknown key ids. A token with an unknown kid
   * that comes sooner waits for the next allowed fetch (shared by every such request), so a key
   * the issuer has just published verifies at once, and garbage kids cannot make us hammer it.
   */
  cooldownMs?: number;
  /** The least time between two attempts while the issuer is unreachable. */
  retryMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** The unknown-kid cooldown unless one is given (never longer than the cache lifetime). */
export const KEY_COOLDOWN_MS = 2000;

/**
 * Where an issuer's metadata may be, in the order tried: OpenID Connect Discovery appends the
 * well-known path to the issuer (Auth0, Entra ID, Keycloak, Okta); RFC 8414 inserts it between the
 * host and the issuer's path; Okta's authorization servers also answer it appended. A trailing
 * slash of the issuer (Auth0's form) is not doubled.
 */
export function metadataUrls(issuer: string): string[] {
  const base = trimEnd(issuer, '/');
  const { origin, pathname } = new URL(base);
  const path = pathname === '/' ? '' : pathname;
  const urls = [
    `${base}/.well-known/openid-configuration`,
    `${origin}/.well-known/oauth-authorization-server${path}`,
    `${base}/.well-known/oauth-authorization-server`,
  ];
  return [...new Set(urls)];
}

async function getJson(url: string, timeoutMs: number): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  return res.json();
}

function isJwks(value: unknown): value is Jwks {
  return !!value && typeof value === 'object' && Array.isArray((value as Jwks).keys);
}

/** The jwks_uri the issuer's metadata names (the first well-known document that names one). */
async function discoverJwksUri(issuer: string, timeoutMs: number): Promise<string> {
  for (const url of metadataUrls(issuer)) {
    try {
      const meta = (await getJson(url, timeoutMs)) as { jwks_uri?: unknown };
      if (typeof meta.jwks_uri === 'string') return meta.jwks_uri;
    } catch {
      // try the next well-known document
    }
  }
  throw new Error(`no jwks_uri found in the metadata of ${issuer}`);
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export function remoteKeySource(opts: RemoteKeySourceOptions): KeySource {
  const { issuer, timeoutMs = 5000, maxAgeMs = 10 * 60_000, retryMs = 1000, now = Date.now, sleep = realSleep } = opts;
  const cooldownMs = Math.min(opts.cooldownMs ?? KEY_COOLDOWN_MS, maxAgeMs);
  let jwksUri = opts.jwksUri;
  let cached: { jwks: Jwks; fetchedAt: number } | null = null;
  let lastAttempt = -Infinity;
  let lastFailure = -Infinity;
  let inFlight: Promise<Jwks> | null = null;
  let scheduled: Promise<unknown> | null = null;

  async function fetchKeys(): Promise<Jwks> {
    lastAttempt = now();
    try {
      jwksUri ??= await discoverJwksUri(issuer, timeoutMs);
      const body = await getJson(jwksUri, timeoutMs);
      if (!isJwks(body)) throw new Error(`${jwksUri} did not answer a JSON Web Key Set`);
      cached = { jwks: body, fetchedAt: now() };
      return body;
    } catch (err) {
      lastFailure = now();
      if (opts.jwksUri === null) jwksUri = null; // discover again next time
      throw err;
    }
  }

  function refresh(): Promise<Jwks> {
    inFlight ??= fetchKeys().finally(() => {
      inFlight = null;
    });
    return inFlight;
  }

  const knows = (jwks: Jwks, kid: string | undefined) => kid === undefined || jwks.keys.some((k) => k.kid === kid);

  /** A fetch for an unknown kid: now if the cooldown allows, else one fetch when it ends, shared by every request waiting for it. */
  async function refreshForUnknownKid(): Promise<void> {
    const wait = lastAttempt + cooldownMs - now();
    if (wait <= 0) {
      await refresh().catch(() => undefined);
      return;
    }
    scheduled ??= sleep(wait).then(() => {
      scheduled = null;
      return refresh().catch(() => undefined);
    });
    await scheduled;
  }

  return {
    async keysFor(kid) {
      if (cached) {
        if (!knows(cached.jwks, kid)) {
          await refreshForUnknownKid();
          return cached.jwks; // with the kid when the issuer published it, without otherwise (the token is refused)
        }
        if (now() - cached.fetchedAt < maxAgeMs) return cached.jwks;
        // Stale: fetch again (a key the issuer removed stops verifying); if the issuer cannot be
        // reached, the last keys it published keep serving.
        return refresh().catch(() => cached!.jwks);
      }
      if (now() - lastFailure < retryMs && !inFlight) {
        throw new IssuerUnavailableError(`the keys of issuer ${issuer} could not be fetched`);
      }
      try {
        return await refresh();
      } catch (err) {
        throw new IssuerUnavailableError(`the keys of issuer ${issuer} could not be fetched: ${(err as Error).message}`);
      }
    },
  };
}
