// Where verification keys come from. The embedded issuer hands its JWKS over directly; an external
// issuer's JWKS is fetched (after discovery when only AUTH_ISSUER is set), cached, and fetched again
// when a token names an unknown key id. When keys cannot be had at all the caller learns it as
// IssuerUnavailableError (a 503), never as a bad token; the next request after the issuer comes
// back recovers by itself.
import type { Jwks } from './local-issuer';

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
  /** The least time between two fetches prompted by unknown key ids. */
  cooldownMs?: number;
  /** The least time between two attempts while the issuer is unreachable. */
  retryMs?: number;
  now?: () => number;
}

async function getJson(url: string, timeoutMs: number): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  return res.json();
}

function isJwks(value: unknown): value is Jwks {
  return !!value && typeof value === 'object' && Array.isArray((value as Jwks).keys);
}

export function remoteKeySource(opts: RemoteKeySourceOptions): KeySource {
  const { issuer, timeoutMs = 5000, maxAgeMs = 10 * 60_000, cooldownMs = 30_000, retryMs = 1000, now = Date.now } = opts;
  let jwksUri = opts.jwksUri;
  let cached: { jwks: Jwks; fetchedAt: number } | null = null;
  let lastAttempt = -Infinity;
  let lastFailure = -Infinity;
  let inFlight: Promise<Jwks> | null = null;

  async function discover(): Promise<string> {
    for (const wellKnown of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      try {
        const meta = (await getJson(`${issuer}${wellKnown}`, timeoutMs)) as { jwks_uri?: unknown };
        if (typeof meta.jwks_uri === 'string') return meta.jwks_uri;
      } catch {
        // try the next well-known document
      }
    }
    throw new Error(`no jwks_uri found in the metadata of ${issuer}`);
  }

  async function fetchKeys(): Promise<Jwks> {
    lastAttempt = now();
    try {
      jwksUri ??= await discover();
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

  return {
    async keysFor(kid) {
      const t = now();
      if (cached) {
        const known = kid === undefined || cached.jwks.keys.some((k) => k.kid === kid);
        const fresh = t - cached.fetchedAt < maxAgeMs;
        if ((known && fresh) || (!known && t - lastAttempt < cooldownMs)) return cached.jwks;
        // Stale, or an unknown kid after the cooldown (the issuer may have rotated its keys).
        return refresh().catch(() => cached!.jwks);
      }
      if (t - lastFailure < retryMs && !inFlight) {
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
