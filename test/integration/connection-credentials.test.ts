// OAuth 2.0 client-credentials connections (issue 44) against a real token endpoint on loopback:
// the client authenticates as RFC 6749 section 2.3.1 says, the token is fetched once for concurrent
// calls across two processes' credential sources (one renewal at a time: the store's claim),
// kept sealed, reused until a minute before it expires, renewed after; a refused client is a
// CredentialsRefused the connection's check records as expired.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CredentialsRefused } from '../../src/apps/types';
import { createCredentialSource, credentialsContext } from '../../src/services/connection-credentials';
import { createSecretBox } from '../../src/services/secret-box';
import { startService, type TestService } from '../helpers/service';

let t: TestService;
let tokenEndpoint: http.Server;
let url: string;
const requests: { authorization?: string; body: string }[] = [];
let lifetimeSeconds = 3600;
const secrets = createSecretBox([Buffer.alloc(32, 7)]);

beforeAll(async () => {
  t = await startService();
  tokenEndpoint = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push({ authorization: req.headers.authorization, body });
      // Slow enough that concurrent callers overlap.
      setTimeout(() => {
        const refused = req.headers.authorization !== `Basic ${Buffer.from('client%3A1:s3cr%C3%A9t').toString('base64')}`;
        res.writeHead(refused ? 401 : 200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(refused ? { error: 'invalid_client' } : { access_token: `tok-${requests.length}`, token_type: 'Bearer', expires_in: lifetimeSeconds }),
        );
      }, 100);
    });
  });
  await new Promise<void>((resolve) => tokenEndpoint.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(tokenEndpoint.address() as AddressInfo).port}/oauth/token`;
});
afterAll(async () => {
  tokenEndpoint.closeAllConnections();
  await new Promise((resolve) => tokenEndpoint.close(resolve));
  await t.close();
});

async function oauthConnection(ws: string, ref: string, clientSecret: string) {
  const credentials = {
    kind: 'oauth2_client_credentials' as const,
    token_url: url,
    client_id: 'client:1',
    client_secret: clientSecret,
    scope: 'tickets:write',
    audience: null,
  };
  const created = await t.service.store.connections.create(
    ws,
    {
      ref,
      app: 'kv',
      label: null,
      status: 'connected',
      credentialsShown: { kind: credentials.kind },
      sealedCredentials: secrets.seal(JSON.stringify(credentials), credentialsContext(ws, ref)),
      lastError: null,
      testedAt: null,
      receiverId: null,
    },
    100,
  );
  expect(created.ok).toBe(true);
}

test('concurrent calls in two processes fetch one token, sent as a bearer token; it is kept sealed and reused', async () => {
  await oauthConnection('oauth-ws', 'acme', 's3crét');
  const sources = [0, 1].map(() => createCredentialSource({ connections: t.service.store.connections, secrets, allowPrivate: true }));
  const before = requests.length;
  const headers = await Promise.all(Array.from({ length: 8 }, (_, i) => sources[i % 2]!.headersFor('oauth-ws', 'acme')));
  expect(new Set(headers.map((h) => h.authorization))).toEqual(new Set([`Bearer tok-${before + 1}`]));
  expect(requests.length - before).toBe(1);
  expect(requests.at(-1)!.body).toBe('grant_type=client_credentials&scope=tickets%3Awrite');
  const stored = await t.service.store.connections.get('oauth-ws', 'acme');
  expect(stored!.token!.sealed).toMatch(/^enc:v1:/);
  expect(stored!.token!.sealed).not.toContain('tok-');
  expect(await sources[0]!.headersFor('oauth-ws', 'acme')).toEqual({ authorization: `Bearer tok-${before + 1}` });
  expect(requests.length - before).toBe(1);
});

test('a token within a minute of its expiry is renewed; a refused client is CredentialsRefused', async () => {
  lifetimeSeconds = 30; // already inside the minute before expiry: each call renews
  await oauthConnection('oauth-ws', 'short', 's3crét');
  const source = createCredentialSource({ connections: t.service.store.connections, secrets, allowPrivate: true });
  const before = requests.length;
  await source.headersFor('oauth-ws', 'short');
  await source.headersFor('oauth-ws', 'short');
  expect(requests.length - before).toBe(2);
  lifetimeSeconds = 3600;

  await oauthConnection('oauth-ws', 'refused', 'wrong');
  const refused = source.headersFor('oauth-ws', 'refused');
  await expect(refused).rejects.toBeInstanceOf(CredentialsRefused);
  await expect(refused).rejects.toThrow('the token endpoint refused the client credentials with 401 (invalid_client)');
});

test('the token endpoint is held to the outbound address rule', async () => {
  await oauthConnection('oauth-ws', 'private', 's3crét');
  const strict = createCredentialSource({ connections: t.service.store.connections, secrets, allowPrivate: false });
  await expect(strict.headersFor('oauth-ws', 'private')).rejects.toThrow('refused: 127.0.0.1 is not a public (global unicast) address');
});
