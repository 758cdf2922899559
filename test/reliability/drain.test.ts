// SIGTERM as a load balancer sees it, on a real `build-api serve`: /readyz answers 503 at once
// while the API is still served for DRAIN_SECONDS; then new connections are refused, a request in
// flight finishes, an open event stream ends cleanly, a run still executing is handed back, and the
// process exits 0. A second signal exits at once.
import { minimalAgent } from '../helpers/fixtures';
import { startServer, type ServerProcess } from './server';

jest.setTimeout(60_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const status = (url: string, init?: RequestInit) =>
  fetch(url, init).then(
    async (res) => {
      await res.arrayBuffer();
      return res.status;
    },
    () => 'refused' as const,
  );

/** Resolves once the process is gone, with how long that took. */
async function exitOf(s: ServerProcess): Promise<{ ms: number }> {
  const started = Date.now();
  await new Promise<void>((resolve) => {
    const poll = setInterval(() => {
      try {
        process.kill(s.pid(), 0);
      } catch {
        clearInterval(poll);
        resolve();
      }
    }, 20);
  });
  return { ms: Date.now() - started };
}

test('draining: readiness fails at once, the API keeps answering for DRAIN_SECONDS, then the listener closes and the process exits 0', async () => {
  const s = await startServer({ DRAIN_SECONDS: '2' });
  const token = s.token();
  const api = `${s.baseUrl}/api/build/agents`;
  const headers = { authorization: `Bearer ${token}` };
  const created = await s.client(token).PUT('/api/build/agents', {
    body: { ...minimalAgent('Drained'), max_steps: 4, tools: { apps: ['core'], connections: 'all', disabled_tools: [], approval: 'destructive' } },
  });
  const slug = created.data!.data.document.slug;
  // A run that outlasts the drain: executing when the listener closes, so it is handed back.
  const runId = (
    await s.client(token).POST('/api/build/agents/{ref}/test', { params: { path: { ref: slug } }, body: { prompt: '/call core.sleep {"ms":8000}' } })
  ).data!.data.run_id;
  const stream = fetch(`${s.baseUrl}/api/build/runs/${runId}/events`, { headers: { ...headers, accept: 'text/event-stream' } }).then((res) => res.text());
  expect(await status(`${s.baseUrl}/readyz`)).toBe(200);

  const signalledAt = Date.now();
  process.kill(s.pid(), 'SIGTERM');
  await sleep(100);
  expect(await status(`${s.baseUrl}/readyz`)).toBe(503);
  // Still served while draining, with Connection: close so clients reconnect elsewhere.
  const during = await fetch(api, { headers });
  expect(during.status).toBe(200);
  expect(during.headers.get('connection')).toBe('close');
  await during.arrayBuffer();
  expect(await status(`${s.baseUrl}/healthz`)).toBe(200);
  await sleep(1500);
  expect(await status(api, { headers })).toBe(200); // 1.6 s in: still within the drain
  // Past the drain: the port refuses connections; the stream ended cleanly; the process exits 0.
  let refusedAt = 0;
  while (!refusedAt && Date.now() - signalledAt < 10_000) {
    if ((await status(`${s.baseUrl}/healthz`)) === 'refused') refusedAt = Date.now();
    else await sleep(50);
  }
  expect(refusedAt - signalledAt).toBeGreaterThanOrEqual(1900);
  const text = await stream;
  expect(text).toContain('event: run.queued');
  await exitOf(s);
  expect(await s.kill()).toBe(0); // the exit code it already had
  // The run was handed back (not left for its lease to pass): a restarted server finishes it.
  await s.restart();
  const run = await s.client(token).GET('/api/build/runs/{runId}', { params: { path: { runId } } });
  expect(['queued', 'running', 'succeeded']).toContain(run.data!.data.status);
  await s.dispose();
});

test('a second signal exits at once, whatever is left of the drain', async () => {
  const s = await startServer({ DRAIN_SECONDS: '30' });
  process.kill(s.pid(), 'SIGTERM');
  await sleep(200);
  const ready = await status(`${s.baseUrl}/readyz`);
  if (ready !== 503) console.log(s.logs.slice(-10).join('\n'));
  expect(ready).toBe(503);
  process.kill(s.pid(), 'SIGTERM');
  const { ms } = await exitOf(s);
  expect(ms).toBeLessThan(2000);
  await s.dispose();
});

test('a SIGTERM sent the moment the server says it is listening drains it (the handlers are in place first)', async () => {
  // The race is a few microseconds wide: repeated, so that announcing before the handlers fails here.
  for (let attempt = 0; attempt < 12; attempt++) {
    const s = await startServer({ DRAIN_SECONDS: '30' });
    process.kill(s.pid(), 'SIGTERM');
    await sleep(100);
    expect({ attempt, ready: await status(`${s.baseUrl}/readyz`) }).toEqual({ attempt, ready: 503 });
    await s.dispose();
  }
  // Twelve starts of a process, about 4 s each on a busy 2-core CI machine.
}, 180_000);
