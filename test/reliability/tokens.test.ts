// Token attacks across every operation of the spec, against a real server process: each is a 401
// with WWW-Authenticate (or a 403 without the build scope), with no side effect. An issuer whose
// JWKS cannot be reached gives 503, and the service recovers by itself when it comes back.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { signJwt } from '../../src/auth/local-issuer';
import { loadSpec } from '../../src/http/spec';
import { minimalAgent } from '../helpers/fixtures';
import { PUBLIC_BASE_URL, signingKeyOf, startServer, storedTables, type ServerProcess } from './server';

jest.setTimeout(120_000);
let s: ServerProcess;
/** The service's own signing key, as its store keeps it: tokens forged with it pass the signature check, so each is refused for its claims alone. */
let stolenKeyPem: string;
beforeAll(async () => {
  s = await startServer();
  stolenKeyPem = await signingKeyOf(s);
  await s.client().PUT('/api/build/agents', { body: { ...minimalAgent('Target'), slug: 'target', triggers: [{ kind: 'webhook', name: 'Hook' }] } });
  await s
    .client()
    .PUT('/api/build/workflows', { body: { kind: 'service.workflow/v1', slug: 'target', name: 'T', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] } });
});
afterAll(() => s.dispose());

const METADATA = `Bearer resource_metadata="${PUBLIC_BASE_URL}/.well-known/oauth-protected-resource"`;
const now = () => Math.floor(Date.now() / 1000);
const serviceKey = () => crypto.createPrivateKey(stolenKeyPem);
const kid = () => (JSON.parse(Buffer.from(s.token().split('.')[0]!, 'base64url').toString()) as { kid: string }).kid;
const claims = (extra: Record<string, unknown> = {}) => ({
  iss: PUBLIC_BASE_URL,
  aud: 'build-api',
  sub: 'attacker',
  workspace: 'ws-1',
  scope: 'build',
  iat: now(),
  exp: now() + 600,
  ...extra,
});
const forge = (payload: Record<string, unknown>, key = serviceKey(), header: Record<string, unknown> = { alg: 'RS256', kid: kid() }) =>
  signJwt(header, payload, key);
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

const attacks: [string, () => Record<string, string>, 401 | 403, RegExp][] = [
  ['no header', () => ({}), 401, /^missing bearer token/],
  ['wrong scheme', () => ({ authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }), 401, /Bearer/],
  ['malformed', () => ({ authorization: 'Bearer not.a.jwt!' }), 401, /invalid token|Bearer/],
  ['bad signature', () => ({ authorization: `Bearer ${s.token().slice(0, -6)}AAAAAA` }), 401, /invalid token/],
  ['expired', () => ({ authorization: `Bearer ${forge(claims({ iat: now() - 7200, exp: now() - 3600 }))}` }), 401, /invalid token/],
  ['not yet valid', () => ({ authorization: `Bearer ${forge(claims({ nbf: now() + 3600 }))}` }), 401, /invalid token/],
  ['wrong issuer', () => ({ authorization: `Bearer ${forge(claims({ iss: 'http://evil.test' }))}` }), 401, /invalid token/],
  ['wrong audience', () => ({ authorization: `Bearer ${forge(claims({ aud: 'other-api' }))}` }), 401, /invalid token/],
  ['alg none', () => ({ authorization: `Bearer ${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims())}.` }), 401, /invalid token/],
  [
    'HS256 signed with the public key',
    () => {
      const pem = crypto.createPublicKey(serviceKey()).export({ type: 'spki', format: 'pem' });
      const input = `${b64({ alg: 'HS256', typ: 'JWT', kid: kid() })}.${b64(claims())}`;
      return { authorization: `Bearer ${input}.${crypto.createHmac('sha256', pem).update(input).digest('base64url')}` };
    },
    401,
    /invalid token/,
  ],
  [
    'unknown kid',
    () => ({
      authorization: `Bearer ${forge(claims(), crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, { alg: 'RS256', kid: 'not-ours' })}`,
    }),
    401,
    /invalid token/,
  ],
  ['no workspace claim', () => ({ authorization: `Bearer ${forge(claims({ workspace: undefined }))}` }), 401, /workspace/],
  ['no build scope', () => ({ authorization: `Bearer ${forge(claims({ scope: 'read write' }))}` }), 403, /scope "build"/],
];

interface Call {
  name: string;
  method: string;
  path: string;
  body?: string;
}

/** One request per operation of the spec that needs a token, built from its examples. */
function everyOperation(): Call[] {
  const doc = loadSpec().document as {
    paths: Record<
      string,
      Record<string, { operationId: string; security?: unknown[]; requestBody?: { content: Record<string, { examples: Record<string, { $ref: string }> }> } }>
    >;
    components: { examples: Record<string, { value: unknown }> };
  };
  const calls: Call[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      // Operations that declare no security (webhook deliveries: the URL's secret is the credential) take no token.
      if (!op.operationId || op.security?.length === 0) continue;
      const url = template
        .replace('{ref}', 'target')
        .replace('{runId}', '5b0c3a4e-8f1d-4c2a-9e77-0d6f1b2a3c4d')
        .replace('{app}', 'kv')
        .replace('{connectionRef}', 'kv-main')
        .replace('{callId}', 'call_1')
        .replace('{name}', 'target')
        .replace('{dataset}', 'target')
        .replace('{evalId}', '0c9e4f6a-1b2d-4e3f-8a5b-6c7d8e9f0a1b')
        .replace('{baseline}', '0c9e4f6a-1b2d-4e3f-8a5b-6c7d8e9f0a1b')
        .replace('{endpointId}', '019ab2c4-5d6e-7f80-9a1b-2c3d4e5f6a7b')
        .replace('{deliveryId}', '019ab2c4-5d6e-7f80-9a1b-2c3d4e5f6a7c')
        .replace('{version}', '1');
      // A body of the operation's example, or an empty object where the spec gives none (the token is refused first).
      const examples = op.requestBody?.content['application/json']?.examples;
      const example = examples && Object.values(examples)[0]!.$ref.split('/').pop()!;
      const body = example ? JSON.stringify(doc.components.examples[example]!.value) : op.requestBody ? '{}' : undefined;
      calls.push({ name: op.operationId, method: method.toUpperCase(), path: url, body });
    }
  }
  return calls;
}

function snapshot(): Promise<string> {
  return storedTables(s, [
    'agents',
    'workflows',
    'skills',
    'runs',
    'agent_triggers',
    'kv_entries',
    'workspaces',
    'workspace_apps',
    'connections',
    'eval_datasets',
    'evals',
    'event_endpoints',
  ]);
}

test('every attack on every operation is refused with the right status and challenge, and changes nothing', async () => {
  const calls = everyOperation();
  expect(calls).toHaveLength(81);
  const before = await snapshot();
  for (const call of calls) {
    for (const [attack, headers, status, message] of attacks) {
      const res = await fetch(`${s.baseUrl}${call.path}`, {
        method: call.method,
        headers: { ...headers(), ...(call.body && { 'content-type': 'application/json', 'if-match': '*' }) },
        body: call.body,
      });
      const body = (await res.json()) as { error: string };
      const where = `${call.name} / ${attack}`;
      expect([where, res.status]).toEqual([where, status]);
      expect([where, Object.keys(body)]).toEqual([where, ['error']]);
      expect(body.error).toMatch(message);
      const challenge = res.headers.get('www-authenticate');
      if (status === 403) expect(challenge).toBe(`${METADATA}, error="insufficient_scope", scope="build"`);
      else expect(challenge === METADATA || challenge === `${METADATA}, error="invalid_token"`).toBe(true);
    }
  }
  expect(await snapshot()).toBe(before);
});

test('a token in the query string or a form body is refused', async () => {
  const valid = s.token();
  const query = await fetch(`${s.baseUrl}/api/build/agents?access_token=${valid}`);
  expect(query.status).toBe(401);
  const form = await fetch(`${s.baseUrl}/api/build/agents/validate`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `access_token=${valid}`,
  });
  expect(form.status).toBe(401);
  expect(form.headers.get('www-authenticate')).toBe(METADATA);
});

test('an issuer whose JWKS cannot be reached gives 503, and the service recovers by itself', async () => {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...(publicKey.export({ format: 'jwk' }) as object), kid: 'ext-1', alg: 'RS256', use: 'sig' };
  let up = true;
  const jwks = http.createServer((_req, res) => {
    if (!up) {
      res.statusCode = 503;
      return res.end('down');
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}`;
  up = false;
  const external = await startServer({ AUTH_ISSUER: issuer, AUTH_JWKS_URI: `${issuer}/jwks.json` });
  try {
    const token = signJwt({ alg: 'RS256', kid: 'ext-1' }, { ...claims({ iss: issuer }) }, privateKey);
    const call = () => fetch(`${external.baseUrl}/api/build/agents`, { headers: { authorization: `Bearer ${token}` } });
    const down = await call();
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    expect(await down.json()).toEqual({ error: 'the token issuer cannot be reached to verify the token; try again shortly' });
    up = true;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await call()).status).toBe(200);
  } finally {
    await external.dispose();
    jwks.close();
  }
});
