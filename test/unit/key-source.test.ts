import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { IssuerUnavailableError, remoteKeySource } from '../../src/auth/key-source';

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

test('discovers jwks_uri from the issuer metadata, caches, and refetches for an unknown kid after the cooldown', async () => {
  let keys = [{ kid: 'k1', kty: 'RSA', alg: 'RS256', use: 'sig' }];
  const srv = await jwksServer((path) => (path === '/.well-known/oauth-authorization-server' ? { jwks_uri: `${srv.url}/keys` } : path === '/keys' ? { keys } : undefined));
  let now = 0;
  const source = remoteKeySource({ issuer: srv.url, jwksUri: null, cooldownMs: 1000, now: () => now });
  try {
    expect((await source.keysFor('k1')).keys[0]!.kid).toBe('k1');
    await source.keysFor('k1');
    expect(srv.hits).toEqual(['/.well-known/oauth-authorization-server', '/keys']);
    keys = [{ kid: 'k2', kty: 'RSA', alg: 'RS256', use: 'sig' }];
    now = 500; // unknown kid within the cooldown: the cached set answers
    expect((await source.keysFor('k2')).keys[0]!.kid).toBe('k1');
    now = 1500;
    expect((await source.keysFor('k2')).keys[0]!.kid).toBe('k2');
  } finally {
    srv.close();
  }
});

test('no keys at all is IssuerUnavailableError, retried at most once per retry interval', async () => {
  let now = 0;
  const source = remoteKeySource({ issuer: 'http://127.0.0.1:9', jwksUri: 'http://127.0.0.1:9/keys', timeoutMs: 200, retryMs: 1000, now: () => now });
  await expect(source.keysFor('k')).rejects.toBeInstanceOf(IssuerUnavailableError);
  now = 10;
  await expect(source.keysFor('k')).rejects.toThrow(/could not be fetched$/);
});
