// The embedded issuer used when no AUTH_ISSUER is configured: an RS256 key pair kept by the store
// (created on first use: store.signingKey), its public JWKS, and token minting
// for `build-api token`. Tokens it mints are verified by the same code path as a real issuer's.
import crypto from 'node:crypto';
import path from 'node:path';
import { SIGNING_KEY_FILE, readOrCreateKeyFile } from '../data-directory/key-file';

export interface Jwk {
  kty: string;
  kid: string;
  alg: string;
  use: string;
  [member: string]: unknown;
}

export interface Jwks {
  keys: Jwk[];
}

export interface LocalIssuer {
  issuer: string;
  jwks: Jwks;
  mint(claims: TokenClaims): string;
}

export interface TokenClaims {
  sub: string;
  audience: string;
  /** Extra claims, e.g. the workspace claim and `scope`. */
  claims: Record<string, unknown>;
  ttlSeconds: number;
  /** Seconds since the epoch; tests set it to mint expired or not-yet-valid tokens. */
  now?: number;
}

/** A new RS256 signing key (2048-bit RSA, PKCS#8 PEM). */
export function generateSigningKey(): string {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
}

const base64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

export function signJwt(header: Record<string, unknown>, payload: Record<string, unknown>, key: crypto.KeyObject): string {
  const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`;
  const signature = crypto.sign('sha256', Buffer.from(signingInput), key);
  return `${signingInput}.${base64url(signature)}`;
}

/**
 * The issuer of the SQLite store's data directory (its key file, created on first use): for tools
 * and tests that mint tokens beside a server. The server itself takes its key from its store.
 */
export function openLocalIssuer(dataDir: string, issuer: string): LocalIssuer {
  return localIssuerFromKey(readOrCreateKeyFile(path.join(dataDir, SIGNING_KEY_FILE), generateSigningKey), issuer);
}

/** The issuer that signs with `pem` as `issuer`. */
export function localIssuerFromKey(pem: string, issuer: string): LocalIssuer {
  const privateKey = crypto.createPrivateKey(pem);
  const publicJwk = crypto.createPublicKey(privateKey).export({ format: 'jwk' }) as { kty: string; n: string; e: string };
  // RFC 7638 thumbprint as the key id, so the kid changes exactly when the key does.
  const kid = base64url(
    crypto
      .createHash('sha256')
      .update(JSON.stringify({ e: publicJwk.e, kty: publicJwk.kty, n: publicJwk.n }))
      .digest(),
  );
  const jwks: Jwks = { keys: [{ ...publicJwk, kid, alg: 'RS256', use: 'sig' }] };
  return {
    issuer,
    jwks,
    mint({ sub, audience, claims, ttlSeconds, now = Math.floor(Date.now() / 1000) }) {
      const payload = { ...claims, iss: issuer, sub, aud: audience, iat: now, nbf: now, exp: now + ttlSeconds, jti: crypto.randomUUID() };
      return signJwt({ alg: 'RS256', typ: 'at+jwt', kid }, payload, privateKey);
    },
  };
}
