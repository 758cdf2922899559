// One delivery attempt's POST against real receivers on loopback: signed so that the
// standardwebhooks library verifies it, no redirect followed, the answer's status, Retry-After and
// first bytes kept (a long answer is not read to its end), the deadline covering a receiver that
// never answers or stalls mid-answer, and the outbound address rule applied to the URL.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { createLogger } from '../../src/log';
import { endpointSecretContext } from '../../src/services/event-endpoints';
import { eventPoster, RESPONSE_PREFIX_BYTES } from '../../src/services/event-post';
import { createSecretBox } from '../../src/services/secret-box';
import type { ClaimedDelivery } from '../../src/store/port';

const secrets = createSecretBox([crypto.randomBytes(32)]);
const secret = `whsec_${crypto.randomBytes(32).toString('base64')}`;
const TIMEOUT_MS = 600;
const poster = eventPoster({ secrets, allowPrivate: true, timeoutMs: TIMEOUT_MS, perEndpoint: 2, logger: createLogger('silent') });
const received: { path: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
const stalled = new Set<http.ServerResponse>();

// Each path answers as its name says.
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    received.push({ path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    const path = req.url!.split('?')[0];
    if (path === '/ok') res.writeHead(204).end();
    else if (path === '/redirect') res.writeHead(302, { location: '/ok' }).end();
    else if (path === '/busy') res.writeHead(429, { 'retry-after': '7' }).end('slow down');
    else if (path === '/long') res.writeHead(500).end('x'.repeat(200 * 1024));
    else if (path === '/silent') stalled.add(res);
    else if (path === '/stall-body') {
      res.writeHead(200).write('partial');
      stalled.add(res);
    }
  });
});
let base = '';

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of stalled) res.destroy();
  poster.close();
  await new Promise((resolve) => server.close(resolve));
});

const delivery = (url: string): ClaimedDelivery => ({
  id: crypto.randomUUID(),
  workspaceId: 'ws',
  endpointId: 'ep',
  eventId: `evt_${crypto.randomBytes(16).toString('hex')}`,
  attempt: 1,
  manual: false,
  body: JSON.stringify({ type: 'run.finished', timestamp: new Date().toISOString(), data: { run_id: 'r', sequence: 1 } }),
  url,
  sealedSecret: secrets.seal(secret, endpointSecretContext('ws', 'ep')),
  previous: null,
});

test('a 2xx: the body as stored, signed so that the official library verifies it', async () => {
  const row = delivery(`${base}/ok?from=test`);
  const result = await poster.post(row);
  expect(result).toMatchObject({ statusCode: 204, error: null, retryAfter: null, responsePrefix: null });
  const got = received.find((r) => r.headers['webhook-id'] === row.eventId)!;
  expect(got.path).toBe('/ok?from=test');
  expect(got.body).toBe(row.body);
  expect(new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).toEqual(JSON.parse(row.body));
});

test('a redirect is not followed: its status is the answer', async () => {
  const before = received.length;
  expect(await poster.post(delivery(`${base}/redirect`))).toMatchObject({ statusCode: 302, error: null });
  expect(received.slice(before).map((r) => r.path)).toEqual(['/redirect']);
});

test("Retry-After and the answer's first bytes are kept; a long answer is cut and its status stands", async () => {
  expect(await poster.post(delivery(`${base}/busy`))).toMatchObject({ statusCode: 429, retryAfter: '7', responsePrefix: 'slow down' });
  const long = await poster.post(delivery(`${base}/long`));
  expect(long).toMatchObject({ statusCode: 500, error: null });
  expect(long.responsePrefix).toBe('x'.repeat(RESPONSE_PREFIX_BYTES));
});

test('the deadline: a receiver that never answers fails the attempt; one that stalls mid-answer keeps its status', async () => {
  const silent = await poster.post(delivery(`${base}/silent`));
  expect(silent).toMatchObject({ statusCode: null, error: `no answer within ${TIMEOUT_MS} ms` });
  expect(silent.latencyMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
  expect(silent.latencyMs).toBeLessThan(TIMEOUT_MS + 1000);
  expect(await poster.post(delivery(`${base}/stall-body`))).toMatchObject({ statusCode: 200, error: null, responsePrefix: 'partial' });
});

test('nothing listening, not a URL, or an address the outbound rule refuses: the error says so and nothing is sent', async () => {
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const refused = await poster.post(delivery(`http://127.0.0.1:${port}/`));
  expect(refused.statusCode).toBeNull();
  expect(refused.error).toMatch(/ECONNREFUSED/);
  expect(await poster.post(delivery('not a url'))).toMatchObject({ statusCode: null, error: 'the endpoint URL is not a URL' });
  const strict = eventPoster({ secrets, allowPrivate: false, timeoutMs: TIMEOUT_MS, perEndpoint: 1, logger: createLogger('silent') });
  const before = received.length;
  try {
    const guarded = await strict.post(delivery(`${base}/ok`));
    expect(guarded.statusCode).toBeNull();
    expect(guarded.error).toEqual(expect.any(String));
    expect(received.length).toBe(before);
  } finally {
    strict.close();
  }
});
