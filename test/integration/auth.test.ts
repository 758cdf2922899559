import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startService, type TestService } from '../helpers/service';
import { signJwt } from '../../src/auth/local-issuer';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

const METADATA = 'Bearer resource_metadata="http://build.test/.well-known/oauth-protected-resource"';

function get(token: string | null, path = '/api/build/agents', headers: Record<string, string> = {}) {
  return fetch(`${t.baseUrl}${path}`, { headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...headers } });
}

function forge(header: Record<string, unknown>, payload: Record<string, unknown>, key: crypto.KeyObject): string {
  return signJwt(header, payload, key);
}

function claims(overrides: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000);
  return { iss: 'http://build.test', aud: 'build-api', sub: 'user-1', workspace: 'ws-1', scope: 'build', iat: now, exp: now + 600, ...overrides };
}

async function expectUnauthorized(res: Response, challenge: string, message: RegExp) {
  expect(res.status).toBe(401);
  expect(res.headers.get('www-authenticate')).toBe(challenge);
  const body = (await res.json()) as { error: string };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error).toMatch(message);
}

describe('401', () => {
  test('no token: WWW-Authenticate names the resource metadata, without an error code', async () => {
    await expectUnauthorized(await get(null), METADATA, /^missing bearer token/);
  });

  test('wrong scheme and malformed tokens', async () => {
    // Another scheme is no bearer token at all: no error code (RFC 6750 §3.1); a malformed Bearer one is invalid.
    await expectUnauthorized(await get(null, '/api/build/agents', { authorization: 'Basic dXNlcjpwYXNz' }), METADATA, /must be "Bearer <token>"/);
    await expectUnauthorized(
      await get(null, '/api/build/agents', { authorization: 'Bearer a b' }),
      `${METADATA}, error="invalid_token"`,
      /must be "Bearer <token>"/,
    );
    await expectUnauthorized(await get('not-a-jwt'), `${METADATA}, error="invalid_token"`, /not a JWT/);
  });

  test.each<[string, () => string | Promise<string>]>([
    ['expired', () => t.token({ now: Math.floor(Date.now() / 1000) - 3600, ttl: 60 })],
    ['not yet valid', () => t.token({ now: Math.floor(Date.now() / 1000) + 3600 })],
    ['wrong audience', () => forgeWithServiceKey(claims({ aud: 'someone-else' }))],
    ['wrong issuer', () => forgeWithServiceKey(claims({ iss: 'http://evil.test' }))],
    ['bad signature', () => `${t.token().slice(0, -4)}AAAA`],
    [
      'alg none',
      () => `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims())).toString('base64url')}.`,
    ],
    ['HS256 signed with the public key', () => hs256WithPublicKey()],
    ['unknown kid', () => forge({ alg: 'RS256', kid: 'unknown' }, claims(), crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey)],
    ['no workspace claim', () => forgeWithServiceKey(claims({ workspace: undefined }))],
    ['no sub', () => forgeWithServiceKey(claims({ sub: undefined }))],
  ])('%s: 401 invalid_token and no side effect', async (_name, make) => {
    const res = await fetch(`${t.baseUrl}/api/build/workflows`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${await make()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'service.workflow/v1', slug: 'never-written', name: 'x', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] }),
    });
    await expectUnauthorized(res, `${METADATA}, error="invalid_token"`, /invalid token/);
    const list = await t.client().GET('/api/build/workflows');
    expect(list.data!.data).toEqual([]);
  });

  test('a token that verified stops working after its exp (5 s of clock tolerance); the verified-token cache keeps none past it', async () => {
    const token = t.token({ ttl: 1 });
    expect((await get(token)).status).toBe(200);
    expect((await get(token)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 6500));
    await expectUnauthorized(await get(token), `${METADATA}, error="invalid_token"`, /invalid token/);
  }, 15_000);

  test('one keep-alive connection carrying different tokens: each request is judged by its own token', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const ports = new Set<number>();
    const statusOf = (token: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.get(`${t.baseUrl}/api/build/agents`, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
          ports.add(res.socket.localPort as number);
          res.resume().on('end', () => resolve(res.statusCode as number));
        });
        req.on('error', reject);
      });
    try {
      const valid = t.token();
      expect(await statusOf(valid)).toBe(200);
      expect(await statusOf(valid)).toBe(200);
      expect(await statusOf(t.token({ scope: 'read' }))).toBe(403);
      expect(await statusOf(`${valid.slice(0, -4)}AAAA`)).toBe(401);
      expect(await statusOf(valid)).toBe(200);
      expect(ports.size).toBe(1); // all on the one connection
    } finally {
      agent.destroy();
    }
  });

  test('a token in the query string is refused, even a valid one', async () => {
    await expectUnauthorized(await get(null, `/api/build/agents?access_token=${t.token()}`), `${METADATA}, error="invalid_token"`, /query string is refused/);
  });
});

async function serviceKey(): Promise<crypto.KeyObject> {
  // The embedded issuer's key, as the store keeps it (a file beside the SQLite database, a row in
  // PostgreSQL); forging with it isolates one claim at a time.
  return crypto.createPrivateKey(
    await t.service.store.signingKey(() => {
      throw new Error('no key stored');
    }),
  );
}

async function forgeWithServiceKey(payload: Record<string, unknown>): Promise<string> {
  return forge({ alg: 'RS256', typ: 'at+jwt', kid: t.service.localIssuer!.jwks.keys[0]!.kid }, payload, await serviceKey());
}

async function hs256WithPublicKey(): Promise<string> {
  const publicPem = crypto.createPublicKey(await serviceKey()).export({ type: 'spki', format: 'pem' });
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: t.service.localIssuer!.jwks.keys[0]!.kid })).toString('base64url');
  const body = Buffer.from(JSON.stringify(claims())).toString('base64url');
  const mac = crypto.createHmac('sha256', publicPem).update(`${header}.${body}`).digest('base64url');
  return `${header}.${body}.${mac}`;
}

describe('403 and scopes', () => {
  test('a valid token without the build scope is 403, when verified and again when known from the cache', async () => {
    const token = t.token({ scope: 'read write' });
    for (let i = 0; i < 2; i++) {
      const res = await get(token);
      expect(res.status).toBe(403);
      expect(res.headers.get('www-authenticate')).toBe(`${METADATA}, error="insufficient_scope", scope="build"`);
      expect(await res.json()).toEqual({ error: 'the token has no Build authorization: scope "build" is required' });
    }
  });

  test('build in a permissions array grants access', async () => {
    const token = await forgeWithServiceKey(claims({ scope: undefined, permissions: ['build'] }));
    expect((await get(token)).status).toBe(200);
  });

  test('the token is checked before the body: an unauthenticated oversized body is 401, not 413', async () => {
    const res = await fetch(`${t.baseUrl}/api/build/agents/validate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(70_000),
    });
    expect(res.status).toBe(401);
  });
});

describe('protected resource metadata', () => {
  test('names the issuer and the build scope', async () => {
    const res = await fetch(`${t.baseUrl}/.well-known/oauth-protected-resource`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      resource: 'http://build.test',
      authorization_servers: ['http://build.test'],
      scopes_supported: ['build'],
      bearer_methods_supported: ['header'],
      resource_documentation: 'http://build.test/docs',
    });
    const jwks = (await (await fetch(`${t.baseUrl}/.well-known/jwks.json`)).json()) as { keys: { kty: string; d?: string }[] };
    expect(jwks.keys[0]!.kty).toBe('RSA');
    expect(jwks.keys[0]).not.toHaveProperty('d');
  });
});

describe('an external issuer', () => {
  test('an unreachable JWKS is 503, and the service recovers when it comes back', async () => {
    const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = { ...(publicKey.export({ format: 'jwk' }) as object), kid: 'k1', alg: 'RS256', use: 'sig' };
    const jwksServer = http.createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
    const port = (jwksServer.address() as AddressInfo).port;
    jwksServer.close(); // the port is known but nothing answers yet
    const issuer = `http://127.0.0.1:${port}`;
    const external = await startService({ AUTH_ISSUER: issuer, AUTH_JWKS_URI: `${issuer}/jwks.json` });
    try {
      const token = signJwt({ alg: 'RS256', kid: 'k1' }, { ...claims({ iss: issuer }) }, privateKey);
      const down = await fetch(`${external.baseUrl}/api/build/agents`, { headers: { authorization: `Bearer ${token}` } });
      expect(down.status).toBe(503);
      expect(await down.json()).toEqual({ error: 'the token issuer cannot be reached to verify the token; try again shortly' });

      await new Promise<void>((resolve) => jwksServer.listen(port, '127.0.0.1', resolve));
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const up = await fetch(`${external.baseUrl}/api/build/agents`, { headers: { authorization: `Bearer ${token}` } });
      expect(up.status).toBe(200);
    } finally {
      jwksServer.close();
      await external.close();
    }
  }, 20_000); // an RSA key pair, a service start and the issuer's one-second back-off: seconds on a loaded machine
});
