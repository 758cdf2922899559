// The embedded issuer used when no AUTH_ISSUER is configured: an RS256 key pair kept in the data
// directory (created on first use, readable by its owner only), its public JWKS, and token minting
// for `build-api token`. Tokens it mints are verified by the same code path as a real issuer's.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

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

const KEY_FILE = 'issuer-key.pem';

function loadOrCreateKey(dataDir: string): crypto.KeyObject {
  const file = path.join(dataDir, KEY_FILE);
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    return crypto.createPrivateKey(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  try {
    // 'wx': if another process created the key meanwhile, keep theirs.
    fs.writeFileSync(file, pem, { mode: 0o600, flag: 'wx' });
    return privateKey;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return crypto.createPrivateKey(fs.readFileSync(file, 'utf8'));
  }
}

const base64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

export function signJwt(header: Record<string, unknown>, payload: Record<string, unknown>, key: crypto.KeyObject): string {
  const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`;
  const signature = crypto.sign('sha256', Buffer.from(signingInput), key);
  return `${signingInput}.${base64url(signature)}`;
}

export function openLocalIssuer(dataDir: string, issuer: string): LocalIssuer {
  const privateKey = loadOrCreateKey(dataDir);
  const publicJwk = crypto.createPublicKey(privateKey).export({ format: 'jwk' }) as { kty: string; n: string; e: string };
  // RFC 7638 thumbprint as the key id, so the kid changes exactly when the key does.
  const kid = base64url(crypto.createHash('sha256').update(JSON.stringify({ e: publicJwk.e, kty: publicJwk.kty, n: publicJwk.n })).digest());
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
