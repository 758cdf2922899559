// Nothing a request leaves behind outlives it on a keep-alive connection (issue 41): a few
// connections carry hundreds of thousands of requests — no token, a bad token, a body that is not
// JSON, a body answered before it was read, an authenticated read — while the server's memory and
// event loop are watched (loop-watch.js) and /healthz is timed from this process (the load comes
// from a process of its own: keep-alive-flood.js). A listener, timer or closure kept per request on
// the socket grew the service by gigabytes and stalled /healthz for seconds under this load.
// Bodies that stop after their request was answered are still closed once UNREAD_BODY_MS pass.
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { UNREAD_BODY_MS } from '../../src/http/replies';
import { minimalAgent } from '../helpers/fixtures';
import { startServer, watchHealth, type ServerProcess } from './server';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { QUOTAS_ABOVE_ANY_LOAD } = require('../../scripts/quotas') as { QUOTAS_ABOVE_ANY_LOAD: Record<string, string> };

jest.setTimeout(300_000);

const REQUESTS = 200_000;
const CONNECTIONS = 4;
const MiB = 1024 * 1024;
/** What the server may keep of the flood (its memory after a full collection, before and after). */
const RSS_GROWTH_BYTES = 50 * MiB;
/** What it may grow by at any moment of the flood, garbage included (the leak grew it by a gigabyte). */
const PEAK_GROWTH_BYTES = 128 * MiB;
/**
 * /healthz must answer within this throughout. The leak stalled it for seconds; a healthy server
 * answers in a few milliseconds, but on CI's two cores, with other suites beside this one, a probe
 * once took 112 ms while the server was fine: the bound is set well above that and far below seconds.
 */
const HEALTH_MS = 250;

let s: ServerProcess;
let token: string;
beforeAll(async () => {
  s = await startServer({ ...QUOTAS_ABOVE_ANY_LOAD }, { watch: true, keepRequestLines: false });
  token = s.token({ workspace: 'flooded' });
  const created = await s.client(token).PUT('/api/build/agents', { body: { ...minimalAgent('Read often'), slug: 'read-often' } });
  expect(created.response.status).toBe(201);
});
afterAll(() => s.dispose());

interface FloodResult {
  sent: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
}

function flood(requests: object[], amount = REQUESTS): Promise<FloodResult> {
  const options = JSON.stringify({ url: s.baseUrl, connections: CONNECTIONS, amount, requests });
  const child = spawn(process.execPath, [path.join(__dirname, 'keep-alive-flood.js'), options], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as FloodResult) : reject(new Error(`the flood exited with ${code}: ${out}`))));
  });
}

/** A raw connection, and every byte it has received. */
function connect() {
  const socket = net.connect(Number(new URL(s.baseUrl).port), '127.0.0.1');
  socket.on('error', () => undefined);
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  const replies = () =>
    received
      .split('HTTP/1.1 ')
      .slice(1)
      .map((reply) => Number(reply.slice(0, 3)));
  const replied = async (count: number) => {
    while (replies().length < count && !socket.destroyed) await new Promise((r) => setTimeout(r, 20));
    return replies();
  };
  return { socket, closed, replies, replied };
}

const validateWithoutToken = 'POST /api/build/agents/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n';

test(`${REQUESTS.toLocaleString('en-US')} requests over ${CONNECTIONS} keep-alive connections: memory stays flat, /healthz answers within ${HEALTH_MS} ms, no listener piles up on a socket`, async () => {
  const auth = { authorization: `Bearer ${token}` };
  const json = { 'content-type': 'application/json' };
  const body = JSON.stringify(minimalAgent('Never read'));
  const requests = [
    { method: 'GET', path: '/api/build/agents' },
    { method: 'GET', path: '/api/build/agents', headers: { authorization: 'Bearer not.a-token.at-all' } },
    { method: 'POST', path: '/api/build/agents/validate', headers: { ...auth, ...json }, body: '{"kind":' },
    // Answered (401) before node has read its body, which then arrives: the connection goes on.
    { method: 'POST', path: '/api/build/agents/validate', headers: json, body },
    { method: 'GET', path: '/api/build/agents/read-often', headers: auth },
  ];

  // Beside the flood: connections whose body stops after the 401 (closed once UNREAD_BODY_MS
  // pass), and one whose early-answered body did arrive (kept open past UNREAD_BODY_MS, then used).
  const stalled = Array.from({ length: 20 }, () => {
    const c = connect();
    c.socket.write(`${validateWithoutToken}{"name":`);
    return c;
  });
  const completed = connect();
  completed.socket.write(`${validateWithoutToken}${' '.repeat(1000)}`);
  const kept = (async () => {
    const first = await completed.replied(1);
    await new Promise((r) => setTimeout(r, UNREAD_BODY_MS + 1000));
    completed.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    return [...first, ...(await completed.replied(2)).slice(1)];
  })();

  // A first half, unmeasured: code compiled, caches filled and the heap grown to this load's
  // working size are not what outlives a request. (A start no longer leaves a big heap behind, since
  // the request validators come from the build: on Node 24 the heap then grew by 55 MB during a
  // flood after a tenth's warm-up, to 264 MB, where the older start's process already sat at 338 MB
  // before it.) Then memory is read after a full collection on both sides, so that what is compared
  // is what the process keeps, not garbage the collector has yet to reclaim (on PostgreSQL the heap
  // grows some 60 MB under this load before a full collection gives it back).
  await flood(requests, REQUESTS / 2);
  const before = await s.loopStats({ collected: true });
  const health = watchHealth(s);
  const result = await flood(requests);
  const { slowest, failures, probes } = await health();
  const after = await s.loopStats();
  const retained = await s.loopStats({ collected: true });

  expect(result.errors + result.timeouts).toBe(0);
  expect(result.sent).toBeGreaterThanOrEqual(REQUESTS);
  const perKind = REQUESTS / requests.length;
  expect(result.statuses['401']).toBeGreaterThanOrEqual(3 * perKind - CONNECTIONS * 3);
  expect(result.statuses['400']).toBeGreaterThanOrEqual(perKind - CONNECTIONS);
  expect(result.statuses['200']).toBeGreaterThanOrEqual(perKind - CONNECTIONS);
  expect(Object.keys(result.statuses).sort()).toEqual(['200', '400', '401']);

  expect(retained.rss - before.rss).toBeLessThan(RSS_GROWTH_BYTES);
  expect(after.peakRss - before.rss).toBeLessThan(PEAK_GROWTH_BYTES);
  expect([failures, probes > 10]).toEqual([0, true]);
  expect(slowest).toBeLessThan(HEALTH_MS);
  expect(s.logs.filter((line) => line.includes('MaxListenersExceededWarning'))).toEqual([]);

  // The stalled bodies' connections: answered 401, then closed within UNREAD_BODY_MS (and a margin).
  let deadline: NodeJS.Timeout | undefined;
  const closedIn = await Promise.race([
    Promise.all(stalled.map((c) => c.closed)).then(() => 'closed'),
    new Promise((r) => (deadline = setTimeout(() => r('still open'), UNREAD_BODY_MS + 5000))),
  ]);
  clearTimeout(deadline);
  expect([closedIn, stalled.map((c) => c.replies())]).toEqual(['closed', stalled.map(() => [401])]);
  // The connection whose body arrived was not closed by the bound: it answered again after it.
  expect(await kept).toEqual([401, 200]);
  completed.socket.destroy();
});
