import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { IssuerUnavailableError, metadataUrls, remoteKeySource } from '../../src/auth/key-source';

function jwksServer(handler: (path: string) => unknown) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url!);
    const body = handler(req.url!);
    res.statusCode = body === undefined ? 404 : 200;
    res.end(body === undefined ? '' : JSON.stringify(body));
  });
  return new Promise<{ url: string; hits: string[]; close: () => void }>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, close: () => server.close() })),
  );
}

test('discovers jwks_uri from the issuer metadata, caches, and refetches for an unknown kid (after the cooldown, waiting for it if need be)', async () => {
  let keys = [{ kid: 'k1', kty: 'RSA', alg: 'RS256', use: 'sig' }];
  const srv = await jwksServer((path) =>
    path === '/.well-known/oauth-authorization-server' ? { jwks_uri: `${srv.url}/keys` } : path === '/keys' ? { keys } : undefined,
  );
  let now = 0;
  const slept: number[] = [];
  const sleep = async (ms: number) => {
    slept.push(ms);
    now += ms;
  };
  const source = remoteKeySource({ issuer: srv.url, jwksUri: null, cooldownMs: 1000, now: () => now, sleep });
  try {
    expect((await source.keysFor('k1')).keys[0]!.kid).toBe('k1');
    await source.keysFor('k1');
    // OpenID Connect's document first (absent here), then RFC 8414's.
    expect(srv.hits).toEqual(['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server', '/keys']);
    keys = [{ kid: 'k2', kty: 'RSA', alg: 'RS256', use: 'sig' }];
    now = 400; // an unknown kid within the cooldown: one fetch when it ends, shared by both requests
    const [a, b] = await Promise.all([source.keysFor('k2'), source.keysFor('k3')]);
    expect(a.keys[0]!.kid).toBe('k2');
    expect(b.keys[0]!.kid).toBe('k2');
    expect(slept).toEqual([600]);
    expect(srv.hits.filter((h) => h === '/keys')).toHaveLength(2);
    now = 1500; // a garbage kid right after: waits for the next allowed fetch, then is still unknown
    expect((await source.keysFor('k9')).keys.map((k) => k.kid)).toEqual(['k2']);
    expect(srv.hits.filter((h) => h === '/keys')).toHaveLength(3);
  } finally {
    srv.close();
  }
});

test('a key set older than its lifetime is fetched again: a removed key is gone', async () => {
  let keys = [{ kid: 'k1' }, { kid: 'k2' }];
  const srv = await jwksServer((path) => (path === '/keys' ? { keys } : undefined));
  let now = 0;
  const source = remoteKeySource({ issuer: srv.url, jwksUri: `${srv.url}/keys`, maxAgeMs: 5000, now: () => now });
  try {
    expect((await source.keysFor('k1')).keys).toHaveLength(2);
    keys = [{ kid: 'k2' }];
    now = 4999;
    expect((await source.keysFor('k1')).keys).toHaveLength(2);
    now = 5000;
    expect((await source.keysFor('k1')).keys.map((k) => k.kid)).toEqual(['k2']);
  } finally {
    srv.close();
  }
});

test.each([
  [
    'https://tenant.eu.auth0.com/',
    ['https://tenant.eu.auth0.com/.well-known/openid-configuration', 'https://tenant.eu.auth0.com/.well-known/oauth-authorization-server'],
  ],
  [
    'https://tenant.eu.auth0.com',
    ['https://tenant.eu.auth0.com/.well-known/openid-configuration', 'https://tenant.eu.auth0.com/.well-known/oauth-authorization-server'],
  ],
  [
    'https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0',
    [
      'https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0/.well-known/openid-configuration',
      'https://login.microsoftonline.com/.well-known/oauth-authorization-server/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0',
      'https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0/.well-known/oauth-authorization-server',
    ],
  ],
  [
    'https://sso.example.com/realms/acme/',
    [
      'https://sso.example.com/realms/acme/.well-known/openid-configuration',
      'https://sso.example.com/.well-known/oauth-authorization-server/realms/acme',
      'https://sso.example.com/realms/acme/.well-known/oauth-authorization-server',
    ],
  ],
])('metadata of %s is looked for at the right URLs, no double slash', (issuer, urls) => {
  expect(metadataUrls(issuer)).toEqual(urls);
});

test('no keys at all is IssuerUnavailableError, retried at most once per retry interval', async () => {
  let now = 0;
  const source = remoteKeySource({ issuer: 'http://127.0.0.1:9', jwksUri: 'http://127.0.0.1:9/keys', timeoutMs: 200, retryMs: 1000, now: () => now });
  await expect(source.keysFor('k')).rejects.toBeInstanceOf(IssuerUnavailableError);
  now = 10;
  await expect(source.keysFor('k')).rejects.toThrow(/could not be fetched$/);
});
