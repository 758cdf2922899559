// Bearer-token verification for every /api/build route (docs/auth.md; its place among the checks: docs/errors.md). express-oauth2-jwt-bearer checks
// signature, algorithm (asymmetric only: no `none`, no HS*), issuer, audience and time claims; this
// module decides everything around it: tokens only from the Authorization header, keys from a
// KeySource (503 when the issuer is unreachable), the principal's claims, the `build` scope (403), and
// one WWW-Authenticate header that points at the protected-resource metadata.
import crypto from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { auth, UnauthorizedError, type AuthOptions } from 'express-oauth2-jwt-bearer';
import { ApiError } from '../errors';
import type { Principal } from '../domain/principal';
import { RESERVED_TEAM } from '../domain/spaces';
import { IssuerUnavailableError, type KeySource } from './key-source';
import type { Jwks } from './local-issuer';

export const BUILD_SCOPE = 'build';

export interface BearerOptions {
  issuer: string;
  audience: string;
  workspaceClaim: string;
  /** The claim listing the caller's teams (config.ts, AUTH_TEAMS_CLAIM). */
  teamsClaim: string;
  /** The scope or role that makes the caller a workspace administrator (AUTH_ADMIN_GRANT). */
  adminGrant: string;
  keySource: KeySource;
  resourceMetadataUrl: string;
  /**
   * Name the scope in every challenge, a 401's too (the MCP authorization specification asks it of
   * a resource server, so a client knows what to request); REST challenges name it on 403 only.
   */
  scopeInEveryChallenge?: boolean;
  /**
   * The longest a verified token is remembered (besides its `exp`): the key set's cache lifetime,
   * so that a key the issuer removes stops verifying within it.
   */
  rememberMs: number;
}

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

type Challenge = 'none' | 'invalid_token' | 'insufficient_scope';

export function challengeHeader(resourceMetadataUrl: string, challenge: Challenge, scopeAlways = false): string {
  let value = `Bearer resource_metadata="${resourceMetadataUrl}"`;
  if (challenge === 'invalid_token') value += ', error="invalid_token"';
  if (challenge === 'insufficient_scope') value += ', error="insufficient_scope"';
  if (challenge === 'insufficient_scope' || scopeAlways) value += `, scope="${BUILD_SCOPE}"`;
  return value;
}

function kidOf(token: string): string | undefined | null {
  const [header] = token.split('.');
  try {
    const parsed = JSON.parse(Buffer.from(header ?? '', 'base64url').toString('utf8')) as { kid?: unknown };
    return typeof parsed.kid === 'string' ? parsed.kid : undefined;
  } catch {
    return null;
  }
}

/** A scope-like claim as a list: a space-separated string (`scope`, Entra's `scp`) or an array (Okta's `scp`, Auth0's `permissions`). */
function grants(claim: unknown): readonly unknown[] {
  if (typeof claim === 'string') return claim.split(' ');
  return Array.isArray(claim) ? claim : [];
}

/** Build authorization, wherever the issuer puts granted scopes: `scope`, `scp` or `permissions`. */
function hasBuildScope(payload: Record<string, unknown>): boolean {
  return [payload.scope, payload.scp, payload.permissions].some((claim) => grants(claim).includes(BUILD_SCOPE));
}

/**
 * A claim by name: the member of that name, or else a dotted path into nested objects
 * (`realm_access.roles`). The exact name comes first, as Auth0's namespaced claims are URLs with dots.
 */
function claimAt(payload: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(payload, name)) return payload[name];
  let node: unknown = payload;
  for (const part of name.split('.')) node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
  return node;
}

/** A team slug as documents name teams (openapi.yaml's Space): others in the claim are ignored. */
const TEAM_SLUG = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const MAX_TEAMS = 100;

/** The caller's teams from the teams claim (an array, or a space-separated string); at most MAX_TEAMS. */
function teamsOf(payload: Record<string, unknown>, claim: string): readonly string[] {
  const listed = grants(claimAt(payload, claim));
  const teams = [...new Set(listed.filter((t): t is string => typeof t === 'string' && t.length <= 80 && TEAM_SLUG.test(t) && t !== RESERVED_TEAM))];
  return Object.freeze(teams.slice(0, MAX_TEAMS));
}

/** Whether the token grants the administrator scope or role: in `scope`, `scp`, `permissions`, `roles` or `realm_access.roles`. */
function isAdmin(payload: Record<string, unknown>, grant: string): boolean {
  const places = [payload.scope, payload.scp, payload.permissions, payload.roles, claimAt(payload, 'realm_access.roles')];
  return places.some((claim) => grants(claim).includes(grant));
}

/**
 * express-oauth2-jwt-bearer fills every option left undefined from the process environment
 * (ISSUER_BASE_URL, JWKS_URI, ISSUER, AUDIENCE, SECRET, TOKEN_SIGNING_ALG): a default parameter
 * applies to `undefined` only, so the ones we do not use are passed as null. Any of those
 * variables, set for another program, would otherwise make every new token a 500 or a 401.
 */
function verifierOptions(issuer: string, audience: string, jwks: Jwks): AuthOptions {
  const unused = null as unknown as undefined;
  return {
    issuer,
    audience,
    publicKey: jwks as unknown as string,
    issuerBaseURL: unused,
    jwksUri: unused,
    secret: unused,
    tokenSigningAlg: unused,
    authRequired: true,
    dpop: { enabled: false },
    clockTolerance: 5,
  };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the class refuses control characters
const CLAIM_VALUE = /^[^\s\u0000-\u001f]{1,160}$/;

/** A token that verified: whose it is, whether it grants Build, until when. */
interface Verified {
  principal: Principal;
  build: boolean;
  expiresAtMs: number;
}

/**
 * Tokens that verified, by the SHA-256 of the token (this cache keeps no token), until their
 * `exp`: a client sends the same token many times, and checking a signature (with the library's
 * work around it) costs far more than a hash and a lookup. Bounded; the oldest entries go first.
 */
class VerifiedTokens {
  private readonly entries = new Map<string, Verified>();

  constructor(private readonly max = 10_000) {}

  static key(token: string): string {
    return crypto.hash('sha256', token, 'base64url'); // one call: no Hash object per request
  }

  get(key: string, nowMs: number): Verified | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAtMs <= nowMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /** Remembered until its `exp`, and for `rememberMs` at most (so a removed key stops verifying). */
  set(key: string, principal: Principal, build: boolean, exp: unknown, nowMs: number, rememberMs: number): void {
    if (typeof exp !== 'number') return; // a token without exp is checked every time
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { principal, build, expiresAtMs: Math.min(exp * 1000, nowMs + rememberMs) });
  }
}

/**
 * The principal of a request, or the ApiError (401/403/503) that refuses it. Synchronous when the
 * token was verified before or is refused without a check (the common cases: no promise, no extra
 * turn of the event loop), a promise otherwise (rejected with the refusal). A synchronous refusal is
 * returned, not thrown: a throw from the HTTP parser's callback makes V8 record where it was thrown,
 * work a refusal does not need on the one path anyone can call without a token (docs/benchmarks.md).
 */
export type Authenticate = (req: Request, res: Response, query: Record<string, unknown>) => Principal | ApiError | Promise<Principal>;

/** The refusals of a request, each with its WWW-Authenticate challenge. */
function refusals(resourceMetadataUrl: string, scopeAlways: boolean) {
  // The three challenges, built once (each 401/403 carries one).
  const headersFor = (c: Challenge) => ({ 'WWW-Authenticate': challengeHeader(resourceMetadataUrl, c, scopeAlways) });
  const challenges: Record<Challenge, Record<string, string>> = {
    none: headersFor('none'),
    invalid_token: headersFor('invalid_token'),
    insufficient_scope: headersFor('insufficient_scope'),
  };
  const unauthorized = (message: string, challenge: Challenge) => new ApiError(401, message, {}, challenges[challenge]);
  // The refusals that say the same every time, built once (an ApiError carries no stack and is never changed).
  return {
    unauthorized,
    forbidden: new ApiError(403, `the token has no Build authorization: scope "${BUILD_SCOPE}" is required`, {}, challenges.insufficient_scope),
    tokenInQuery: unauthorized('access_token in the query string is refused; send the token in the Authorization header', 'invalid_token'),
    missingToken: unauthorized('missing bearer token: send Authorization: Bearer <token>', 'none'),
    // Another scheme is no token at all (RFC 6750 §3.1: no error code); a Bearer header whose token
    // is not token68 is an invalid token.
    otherScheme: unauthorized('Authorization: must be "Bearer <token>"', 'none'),
    notBearer: unauthorized('Authorization: must be "Bearer <token>"', 'invalid_token'),
    notJwt: unauthorized('invalid token: not a JWT', 'invalid_token'),
  };
}

export function createBearerAuth(opts: BearerOptions): Authenticate {
  const verifiers = new WeakMap<Jwks, RequestHandler>();
  const verifierFor = (jwks: Jwks): RequestHandler => {
    let verifier = verifiers.get(jwks);
    if (!verifier) {
      verifier = auth(verifierOptions(opts.issuer, opts.audience, jwks));
      verifiers.set(jwks, verifier);
    }
    return verifier;
  };
  const { unauthorized, forbidden, tokenInQuery, missingToken, otherScheme, notBearer, notJwt } = refusals(
    opts.resourceMetadataUrl,
    opts.scopeInEveryChallenge ?? false,
  );
  const verified = new VerifiedTokens();
  // The Authorization header a connection last sent, with its verified token: a client sends the
  // same header on every request of a keep-alive connection, and comparing it costs far less than
  // hashing it to look it up, which every request would pay. Held as long as the connection is.
  const lastOnConnection = new WeakMap<object, { header: string; token: Verified }>();
  const principalOf = (token: Verified) => (token.build ? token.principal : forbidden);

  return function authenticate(req, res, query) {
    if ('access_token' in query) return tokenInQuery;
    const header = req.headers.authorization;
    if (header === undefined) return missingToken;
    const nowMs = Date.now();
    const last = lastOnConnection.get(req.socket);
    if (last && last.header === header && last.token.expiresAtMs > nowMs) return principalOf(last.token);
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
    if (!match) return /^bearer(\s|$)/i.test(header.trimStart()) ? notBearer : otherScheme;
    const token = match[1] as string;
    const cacheKey = VerifiedTokens.key(token);
    const known = verified.get(cacheKey, nowMs);
    if (known) {
      lastOnConnection.set(req.socket, { header, token: known });
      return principalOf(known);
    }
    const kid = kidOf(token);
    if (kid === null || token.split('.').length !== 3) return notJwt;
    return verify(req, res, kid, cacheKey);
  };

  /** A token not seen before: its signature and claims, checked by express-oauth2-jwt-bearer with the issuer's keys. */
  async function verify(req: Request, res: Response, kid: string | undefined, cacheKey: string): Promise<Principal> {
    let jwks: Jwks;
    try {
      jwks = await opts.keySource.keysFor(kid);
    } catch (err) {
      if (err instanceof IssuerUnavailableError) {
        throw new ApiError(503, 'the token issuer cannot be reached to verify the token; try again shortly', {}, { 'Retry-After': '5' });
      }
      throw err;
    }
    await new Promise<void>((resolve, reject) => {
      verifierFor(jwks)(req, res, (err?: unknown) => {
        if (!err) return resolve();
        if (err instanceof UnauthorizedError) {
          reject(unauthorized(`invalid token: ${err.message || 'rejected'}`, 'invalid_token'));
        } else reject(err);
      });
    });

    const payload = (req.auth?.payload ?? {}) as Record<string, unknown>;
    const sub = payload.sub;
    const workspace = payload[opts.workspaceClaim];
    if (typeof sub !== 'string' || !CLAIM_VALUE.test(sub)) throw unauthorized('invalid token: no usable "sub" claim', 'invalid_token');
    if (typeof workspace !== 'string' || !CLAIM_VALUE.test(workspace)) {
      throw unauthorized(`invalid token: no usable "${opts.workspaceClaim}" claim naming the workspace`, 'invalid_token');
    }
    const principal: Principal = { userId: sub, workspaceId: workspace, teams: teamsOf(payload, opts.teamsClaim), admin: isAdmin(payload, opts.adminGrant) };
    const build = hasBuildScope(payload);
    verified.set(cacheKey, principal, build, payload.exp, Date.now(), opts.rememberMs);
    if (!build) throw forbidden;
    return principal;
  }
}
