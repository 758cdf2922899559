// A stand-in for a real identity provider on a loopback port: the discovery document and JWKS at
// the paths the provider really uses, keys of any asymmetric algorithm the service accepts, key
// rotation, and tokens shaped like the provider's. Signatures are made with node's crypto, so a
// token verifies only if the service does real JOSE verification against the published keys.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Alg = 'RS256' | 'PS256' | 'ES256' | 'EdDSA';

interface Key {
  kid: string;
  alg: Alg;
  privateKey: crypto.KeyObject;
  jwk: Record<string, unknown>;
}

function generate(alg: Alg): crypto.KeyPairKeyObjectResult {
  switch (alg) {
    case 'RS256':
    case 'PS256':
      return crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    case 'ES256':
      return crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    case 'EdDSA':
      return crypto.generateKeyPairSync('ed25519');
  }
}

function signature(alg: Alg, input: Buffer, key: crypto.KeyObject): Buffer {
  switch (alg) {
    case 'RS256':
      return crypto.sign('sha256', input, key);
    case 'PS256':
      return crypto.sign('sha256', input, { key, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
    case 'ES256':
      return crypto.sign('sha256', input, { key, dsaEncoding: 'ieee-p1363' });
    case 'EdDSA':
      return crypto.sign(null, input, key);
  }
}

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

export function signToken(header: Record<string, unknown>, payload: Record<string, unknown>, alg: Alg, key: crypto.KeyObject): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${signature(alg, Buffer.from(input), key).toString('base64url')}`;
}

export interface ProviderShape {
  /** The issuer's path below the server's origin ('/' for Auth0's trailing-slash form). */
  issuerPath: string;
  /** Where the provider serves its metadata, relative to the origin. */
  metadataPath: (issuerPath: string) => string;
  /** Where it serves its JWKS, relative to the origin. */
  jwksPath: (issuerPath: string) => string;
  /** The claim the service is told carries the workspace (AUTH_WORKSPACE_CLAIM). */
  workspaceClaim: string;
  /** The audience the service is told to require (AUTH_AUDIENCE). */
  audience: string;
  /** A token's claims as the provider issues them, granting Build or not. */
  claims: (issuer: string, opts: { build: boolean; workspace: string; user: string }) => Record<string, unknown>;
  /** Extra header members (Entra adds x5t; everyone adds typ). */
  header?: Record<string, unknown>;
}

export interface FakeIdp {
  origin: string;
  issuer: string;
  shape: ProviderShape;
  /** Requests the server answered, by path (discovery and JWKS fetches). */
  hits: string[];
  /** Adds a key to the published JWKS; returns its kid. */
  addKey(alg: Alg, kid?: string): string;
  removeKey(kid: string): void;
  /** A provider-shaped token signed with key `kid` (the first key by default). */
  token(opts?: { build?: boolean; workspace?: string; user?: string; kid?: string; claims?: Record<string, unknown> }): string;
  /** Env for a service that trusts this provider. */
  env(): Record<string, string>;
  close(): Promise<void>;
}

export async function startFakeIdp(shape: ProviderShape, firstKeyAlg: Alg = 'RS256'): Promise<FakeIdp> {
  const keys = new Map<string, Key>();
  const hits: string[] = [];
  let origin = '';
  const issuerOf = () => `${origin}${shape.issuerPath}`;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0] as string;
    hits.push(path);
    res.setHeader('content-type', 'application/json');
    if (path === shape.metadataPath(shape.issuerPath)) {
      res.end(
        JSON.stringify({
          issuer: issuerOf(),
          jwks_uri: `${origin}${shape.jwksPath(shape.issuerPath)}`,
          authorization_endpoint: `${issuerOf().replace(/\/$/, '')}/authorize`,
          token_endpoint: `${issuerOf().replace(/\/$/, '')}/token`,
          id_token_signing_alg_values_supported: ['RS256'],
        }),
      );
    } else if (path === shape.jwksPath(shape.issuerPath)) {
      res.end(JSON.stringify({ keys: [...keys.values()].map((k) => k.jwk) }));
    } else {
      res.statusCode = 404;
      res.end('{"error":"not found"}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const idp: FakeIdp = {
    origin,
    get issuer() {
      return issuerOf();
    },
    shape,
    hits,
    addKey(alg, kid = crypto.randomUUID()) {
      const { privateKey, publicKey } = generate(alg);
      keys.set(kid, { kid, alg, privateKey, jwk: { ...(publicKey.export({ format: 'jwk' }) as object), kid, alg, use: 'sig' } });
      return kid;
    },
    removeKey(kid) {
      keys.delete(kid);
    },
    token(opts = {}) {
      const key = opts.kid ? keys.get(opts.kid) : keys.values().next().value;
      if (!key) throw new Error('no such key');
      const payload = {
        ...shape.claims(issuerOf(), { build: opts.build ?? true, workspace: opts.workspace ?? 'acme', user: opts.user ?? 'alice' }),
        ...opts.claims,
      };
      return signToken({ typ: 'JWT', ...shape.header, alg: key.alg, kid: key.kid }, payload, key.alg, key.privateKey);
    },
    env: () => ({ AUTH_ISSUER: issuerOf(), AUTH_AUDIENCE: shape.audience, AUTH_WORKSPACE_CLAIM: shape.workspaceClaim }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  idp.addKey(firstKeyAlg);
  return idp;
}

const times = () => {
  const now = Math.floor(Date.now() / 1000);
  return { iat: now, exp: now + 3600 };
};

const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
const ENTRA_CLIENT = '6e74172b-be56-4843-9ff4-e66a39bb12e3';

/** Token and discovery shapes of the providers integrators run (from each provider's documentation). */
export const PROVIDERS: Record<'auth0' | 'okta' | 'entra' | 'keycloak', ProviderShape> = {
  // Auth0: issuer with a trailing slash, RBAC permissions array, namespaced custom claim, aud array with userinfo.
  auth0: {
    issuerPath: '/',
    metadataPath: () => '/.well-known/openid-configuration',
    jwksPath: () => '/.well-known/jwks.json',
    workspaceClaim: 'https://example.com/workspace',
    audience: 'https://build.example.com/api',
    claims: (iss, o) => ({
      iss,
      sub: `auth0|${o.user}`,
      aud: ['https://build.example.com/api', `${iss}userinfo`],
      ...times(),
      azp: 'kbyuFDidLLm280LIwVFiazOqjO3ty8KH',
      scope: 'openid profile email',
      permissions: o.build ? ['read:agents', 'build'] : ['read:agents'],
      'https://example.com/workspace': o.workspace,
    }),
  },
  // Okta (custom authorization server): issuer /oauth2/default, metadata at oauth-authorization-server, scp as an array.
  okta: {
    issuerPath: '/oauth2/default',
    metadataPath: (p) => `${p}/.well-known/oauth-authorization-server`,
    jwksPath: (p) => `${p}/v1/keys`,
    workspaceClaim: 'workspace',
    audience: 'api://default',
    claims: (iss, o) => ({
      ver: 1,
      jti: `AT.${crypto.randomUUID()}`,
      iss,
      aud: 'api://default',
      ...times(),
      cid: '0oa1a2b3c4d5e6f7g8h9',
      uid: '00u1a2b3c4d5e6f7g8h9',
      scp: o.build ? ['openid', 'build'] : ['openid', 'profile'],
      auth_time: Math.floor(Date.now() / 1000) - 60,
      sub: `${o.user}@example.com`,
      workspace: o.workspace,
    }),
  },
  // Microsoft Entra ID v2.0: issuer /<tenant>/v2.0, JWKS under /discovery/v2.0/keys, scp a space-separated string, tid as the workspace.
  entra: {
    issuerPath: `/${TENANT}/v2.0`,
    metadataPath: (p) => `${p}/.well-known/openid-configuration`,
    jwksPath: () => `/${TENANT}/discovery/v2.0/keys`,
    workspaceClaim: 'tid',
    audience: ENTRA_CLIENT,
    header: { x5t: 'nOo3ZDrODXEK1jKWhXslHR_KXEg' },
    claims: (iss, o) => ({
      aud: ENTRA_CLIENT,
      iss,
      ...times(),
      nbf: Math.floor(Date.now() / 1000),
      aio: 'AWQAm/8TAAAA',
      azp: '0a1b2c3d-0000-4000-8000-000000000000',
      azpacr: '0',
      name: 'Alice Example',
      oid: '00000000-0000-0000-66f3-3332eca7ea81',
      preferred_username: `${o.user}@example.com`,
      rh: '0.AAAA.',
      scp: o.build ? 'User.Read build' : 'User.Read',
      sub: `AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ-${o.user}`,
      tid: o.workspace === 'acme' ? TENANT : o.workspace,
      uti: 'fqiBqXLPj0eQa82S-IYFAA',
      ver: '2.0',
    }),
  },
  // Keycloak: realm issuer path, certs under protocol/openid-connect, scope a space-separated string, workspace from a user-attribute mapper.
  keycloak: {
    issuerPath: '/realms/acme',
    metadataPath: (p) => `${p}/.well-known/openid-configuration`,
    jwksPath: (p) => `${p}/protocol/openid-connect/certs`,
    workspaceClaim: 'workspace',
    audience: 'build-api',
    claims: (iss, o) => ({
      ...times(),
      jti: crypto.randomUUID(),
      iss,
      aud: ['build-api', 'account'],
      sub: crypto
        .createHash('md5')
        .update(o.user)
        .digest('hex')
        .replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-'),
      typ: 'Bearer',
      azp: 'build-cli',
      session_state: crypto.randomUUID(),
      scope: o.build ? 'openid email build profile' : 'openid email profile',
      email_verified: true,
      preferred_username: o.user,
      workspace: o.workspace,
    }),
  },
};
