// The service against issuers shaped like the ones integrators run (Auth0, Okta, Entra ID,
// Keycloak): discovery at each one's own path, its JWKS, its token shape. Real signatures, a real
// HTTP issuer, the service's real verification path.
import { startService, type TestService } from '../helpers/service';
import { PROVIDERS, signToken, startFakeIdp, type FakeIdp } from '../helpers/fake-idp';

const get = (t: TestService, token: string) => fetch(`${t.baseUrl}/api/build/agents`, { headers: { authorization: `Bearer ${token}` } });

async function withProvider(name: keyof typeof PROVIDERS, fn: (idp: FakeIdp, t: TestService) => Promise<void>, env: Record<string, string> = {}) {
  const idp = await startFakeIdp(PROVIDERS[name]);
  const t = await startService({ ...idp.env(), ...env });
  try {
    await fn(idp, t);
  } finally {
    await t.close();
    await idp.close();
  }
}

describe.each(Object.keys(PROVIDERS) as (keyof typeof PROVIDERS)[])('%s-shaped issuer', (name) => {
  test('discovery and JWKS at its paths; a token granting Build is 200, the same token without it 403', async () => {
    await withProvider(name, async (idp, t) => {
      const ok = await get(t, idp.token());
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ data: [], next_cursor: null });
      expect(idp.hits).toContain(idp.shape.metadataPath(idp.shape.issuerPath));
      expect(idp.hits).toContain(idp.shape.jwksPath(idp.shape.issuerPath));

      const denied = await get(t, idp.token({ build: false }));
      expect(denied.status).toBe(403);
      expect(await denied.json()).toEqual({ error: 'the token has no Build authorization: scope "build" is required' });
    });
  });

  test('the workspace comes from the configured claim: a document written with one token is listed for it, not for another workspace', async () => {
    await withProvider(name, async (idp, t) => {
      const token = idp.token({ workspace: 'acme' });
      const created = await fetch(`${t.baseUrl}/api/build/workflows`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'service.workflow/v1', slug: 'hello', name: 'Hello', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] }),
      });
      expect(created.status).toBe(201);
      const mine = (await (await fetch(`${t.baseUrl}/api/build/workflows`, { headers: { authorization: `Bearer ${token}` } })).json()) as { data: unknown[] };
      expect(mine.data).toHaveLength(1);
      const other = idp.token({ workspace: 'globex' });
      const theirs = (await (await fetch(`${t.baseUrl}/api/build/workflows`, { headers: { authorization: `Bearer ${other}` } })).json()) as { data: unknown[] };
      expect(theirs.data).toHaveLength(0);
    });
  });
});

describe('the issuer is compared exactly as configured', () => {
  test('with a trailing slash (Auth0): a token whose iss lacks it is 401', async () => {
    await withProvider('auth0', async (idp, t) => {
      expect(idp.issuer.endsWith('/')).toBe(true);
      expect((await get(t, idp.token())).status).toBe(200);
      const res = await get(t, idp.token({ claims: { iss: idp.issuer.replace(/\/$/, '') } }));
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: "invalid token: Unexpected 'iss' value" });
    });
  });

  test('without one (Keycloak): a token whose iss adds it is 401', async () => {
    await withProvider('keycloak', async (idp, t) => {
      expect((await get(t, idp.token())).status).toBe(200);
      expect((await get(t, idp.token({ claims: { iss: `${idp.issuer}/` } }))).status).toBe(401);
    });
  });

  test('an explicit AUTH_JWKS_URI skips discovery', async () => {
    const idp = await startFakeIdp(PROVIDERS.auth0);
    const t = await startService({ ...idp.env(), AUTH_JWKS_URI: `${idp.origin}/.well-known/jwks.json` });
    try {
      expect((await get(t, idp.token())).status).toBe(200);
      expect(idp.hits).toEqual(['/.well-known/jwks.json']);
    } finally {
      await t.close();
      await idp.close();
    }
  });
});

describe('signature algorithms', () => {
  test('RS256, PS256, ES256 and EdDSA keys in the JWKS each verify their tokens', async () => {
    await withProvider('keycloak', async (idp, t) => {
      for (const alg of ['PS256', 'ES256', 'EdDSA'] as const) idp.addKey(alg, `key-${alg}`);
      expect((await get(t, idp.token())).status).toBe(200); // the first key, RS256
      for (const alg of ['PS256', 'ES256', 'EdDSA'] as const) {
        expect({ alg, status: (await get(t, idp.token({ kid: `key-${alg}` }))).status }).toEqual({ alg, status: 200 });
      }
    });
  });

  test('HS256 (keyed with the public JWK) and alg none are 401', async () => {
    await withProvider('keycloak', async (idp, t) => {
      const kid = idp.addKey('RS256', 'rsa-2');
      const valid = idp.token({ kid });
      const [, payload] = valid.split('.') as [string, string];
      const hsHeader = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid })).toString('base64url');
      const jwks = (await (await fetch(`${idp.origin}${idp.shape.jwksPath(idp.shape.issuerPath)}`)).json()) as { keys: { kid: string; n: string }[] };
      const secret = jwks.keys.find((k) => k.kid === kid)!.n;
      const crypto = await import('node:crypto');
      const mac = crypto.createHmac('sha256', secret).update(`${hsHeader}.${payload}`).digest('base64url');
      expect((await get(t, `${hsHeader}.${payload}.${mac}`)).status).toBe(401);
      const noneHeader = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT', kid })).toString('base64url');
      expect((await get(t, `${noneHeader}.${payload}.`)).status).toBe(401);
    });
  });
});

describe('key rotation (AUTH_JWKS_CACHE_SECONDS=2)', () => {
  test('a new kid verifies as soon as the issuer publishes it; a removed key stops within the cache lifetime', async () => {
    await withProvider(
      'okta',
      async (idp, t) => {
        const oldToken = idp.token();
        const oldKid = JSON.parse(Buffer.from(oldToken.split('.')[0] as string, 'base64url').toString()).kid as string;
        expect((await get(t, oldToken)).status).toBe(200);

        const newKid = idp.addKey('ES256');
        const started = Date.now();
        expect((await get(t, idp.token({ kid: newKid }))).status).toBe(200); // no restart
        expect(Date.now() - started).toBeLessThan(5000); // at most one cooldown's wait (2 s), with room for a loaded machine

        idp.removeKey(oldKid);
        await new Promise((resolve) => setTimeout(resolve, 2600));
        const res = await get(t, oldToken);
        expect(res.status).toBe(401);
        expect((await get(t, idp.token({ kid: newKid }))).status).toBe(200);
      },
      { AUTH_JWKS_CACHE_SECONDS: '2' },
    );
  }, 15_000);

  test('garbage kids do not make the service fetch the JWKS more than once per cooldown', async () => {
    await withProvider('okta', async (idp, t) => {
      expect((await get(t, idp.token())).status).toBe(200);
      const fetchesBefore = idp.hits.filter((h) => h.endsWith('/v1/keys')).length;
      const crypto = await import('node:crypto');
      const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
      const forged = (i: number) =>
        signToken({ alg: 'RS256', kid: `garbage-${i}` }, PROVIDERS.okta.claims(idp.issuer, { build: true, workspace: 'acme', user: 'x' }), 'RS256', privateKey);
      const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => get(t, forged(i)).then((r) => r.status)));
      expect(new Set(statuses)).toEqual(new Set([401]));
      expect(idp.hits.filter((h) => h.endsWith('/v1/keys')).length - fetchesBefore).toBeLessThanOrEqual(1);
    });
  }, 15_000);
});

describe('the library reads no process environment', () => {
  const HOSTILE = {
    ISSUER_BASE_URL: 'http://127.0.0.1:9/hostile',
    JWKS_URI: 'http://127.0.0.1:9/hostile/jwks.json',
    ISSUER: 'http://hostile.example',
    AUDIENCE: 'hostile',
    SECRET: 'hostile-secret',
    TOKEN_SIGNING_ALG: 'HS256',
  };
  let saved: Record<string, string | undefined>;
  beforeEach(() => {
    saved = Object.fromEntries(Object.keys(HOSTILE).map((k) => [k, process.env[k]]));
    Object.assign(process.env, HOSTILE);
  });
  afterEach(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  test('an external issuer: tokens verify as configured, whatever ISSUER_BASE_URL, JWKS_URI, SECRET, TOKEN_SIGNING_ALG say', async () => {
    await withProvider('entra', async (idp, t) => {
      expect((await get(t, idp.token())).status).toBe(200);
      expect((await get(t, idp.token({ build: false }))).status).toBe(403);
    });
  });

  test('the built-in issuer too', async () => {
    const t = await startService();
    try {
      expect((await get(t, t.token())).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});
