// GET /metrics on its own listener (METRICS_PORT) of a real `build-api serve`: the figures move as
// requests, runs, webhook deliveries and streams happen; the queue gauges come from the store; no
// label carries a workspace, a document or user text.
import net from 'node:net';
import { minimalAgent } from '../helpers/fixtures';
import { startServer, type ServerProcess } from './server';

jest.setTimeout(60_000);

/** A port nothing listens on now. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
let s: ServerProcess;
let metricsUrl: string;
beforeAll(async () => {
  const port = await freePort();
  s = await startServer({ METRICS_PORT: String(port) });
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
});
afterAll(() => s?.dispose());

/** The scrape, as series name{labels} → value. */
async function scrape(): Promise<Map<string, number>> {
  const res = await fetch(metricsUrl);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const series = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}
const value = (series: Map<string, number>, name: string) => series.get(name) ?? 0;
/** How much a series grew from one scrape to a later one. */
const growth = (before: Map<string, number>, after: Map<string, number>) => (name: string) => value(after, name) - value(before, name);
const until = async (check: () => Promise<boolean>, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
};

test('requests are counted and timed by operationId and status class', async () => {
  const before = await scrape();
  const client = s.client(s.token({ workspace: 'ws-metrics-secret-name' }));
  const created = await client.PUT('/api/build/agents', { body: minimalAgent('Metrics Private Name') });
  expect(created.response.status).toBe(201);
  for (let i = 0; i < 3; i++) await client.GET('/api/build/agents/{ref}', { params: { path: { ref: created.data!.data.document.slug } } });
  await client.GET('/api/build/agents/{ref}', { params: { path: { ref: 'no-such-agent' } } });
  await fetch(`${s.baseUrl}/api/build/nothing-here`);
  const after = await scrape();
  const grew = growth(before, after);
  expect(grew('build_api_http_requests_total{operation="getAgent",status_class="2xx"}')).toBe(3);
  expect(grew('build_api_http_requests_total{operation="getAgent",status_class="4xx"}')).toBe(1);
  expect(grew('build_api_http_requests_total{operation="createAgent",status_class="2xx"}')).toBe(1);
  expect(grew('build_api_http_requests_total{operation="unmatched",status_class="4xx"}')).toBe(1);
  expect(grew('build_api_http_request_duration_seconds_count{operation="getAgent",status_class="2xx"}')).toBe(3);
  expect(grew('build_api_http_request_duration_seconds_bucket{le="+Inf",operation="getAgent",status_class="2xx"}')).toBe(3);
  // Store calls are timed by method; the process's own metrics are there.
  expect([...after.keys()].some((k) => k.startsWith('build_api_store_call_duration_seconds_count{method="agents.'))).toBe(true);
  expect(after.has('build_api_process_resident_memory_bytes')).toBe(true);
  expect(after.has('build_api_nodejs_eventloop_lag_p99_seconds')).toBe(true);
  // No label carries the workspace, the document or anything the caller wrote.
  const text = [...after.keys()].join('\n');
  expect(text).not.toMatch(/ws-metrics-secret-name|metrics-private-name|Metrics Private Name|no-such-agent|nothing-here/);
});

test('runs: accepted, started, finished, their durations and queue waits; the queue gauges come from the store', async () => {
  const before = await scrape();
  const client = s.client(s.token({ workspace: 'ws-metrics-runs' }));
  const created = await client.PUT('/api/build/agents', {
    body: { ...minimalAgent('Metrics runs'), max_steps: 4, tools: { apps: ['core'], connections: 'all', disabled_tools: [], approval: 'destructive' } },
  });
  const slug = created.data!.data.document.slug;
  const started = await client.POST('/api/build/agents/{ref}/test', { params: { path: { ref: slug } }, body: { prompt: '/call core.sleep {"ms":1500}' } });
  const runId = started.data!.data.run_id;
  // While it sleeps, it is running, and the store says so.
  await until(async () => value(await scrape(), 'build_api_runs_active{state="running"}') >= 1);
  await until(async () => (await client.GET('/api/build/runs/{runId}', { params: { path: { runId } } })).data!.data.status === 'succeeded');
  const after = await scrape();
  const grew = growth(before, after);
  expect(grew('build_api_runs_accepted_total{kind="agent",source="test",outcome="queued"}')).toBe(1);
  expect(grew('build_api_runs_started_total{kind="agent",source="test"}')).toBe(1);
  expect(grew('build_api_runs_finished_total{kind="agent",source="test",status="succeeded"}')).toBe(1);
  expect(grew('build_api_run_duration_seconds_count{kind="agent",status="succeeded"}')).toBe(1);
  expect(grew('build_api_run_duration_seconds_sum{kind="agent",status="succeeded"}')).toBeGreaterThan(1.4);
  expect(grew('build_api_run_queue_wait_seconds_count{kind="agent"}')).toBe(1);
  expect(value(after, 'build_api_runs_active{state="running"}')).toBe(0);
  expect(value(after, 'build_api_runs_active{state="queued"}')).toBe(0);
});

test('webhook deliveries by outcome, and open event streams', async () => {
  const before = await scrape();
  const client = s.client(s.token({ workspace: 'ws-metrics-hooks' }));
  const created = await client.PUT('/api/build/agents', { body: { ...minimalAgent('Metrics hooks'), triggers: [{ kind: 'webhook', name: 'In' }] } });
  const { document } = created.data!.data;
  const url = created.data!.data.webhook_urls![0]!.url.replace('http://reliability.test', s.baseUrl);
  const read = await client.GET('/api/build/agents/{ref}', { params: { path: { ref: document.slug } } });
  await client.POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: document.slug }, header: { 'If-Match': read.response.headers.get('etag')! } },
    body: { status: 'active' },
  });
  expect((await fetch(url, { method: 'POST', body: '{"n":1}', headers: { 'content-type': 'application/json', 'webhook-id': 'm-1' } })).status).toBe(202);
  expect((await fetch(url, { method: 'POST', body: '{"n":1}', headers: { 'content-type': 'application/json', 'webhook-id': 'm-1' } })).status).toBe(202);
  expect((await fetch(`${url}x`, { method: 'POST', body: '{}' })).status).toBe(404);
  const after = await scrape();
  const grew = growth(before, after);
  expect(grew('build_api_webhook_deliveries_total{outcome="queued"}')).toBe(1);
  expect(grew('build_api_webhook_deliveries_total{outcome="repeated"}')).toBe(1);
  expect(grew('build_api_webhook_deliveries_total{outcome="unknown_url"}')).toBe(1);
  expect(grew('build_api_runs_accepted_total{kind="agent",source="webhook",outcome="queued"}')).toBe(1);

  // A stream of a run that sleeps: counted while it is open, and no more once its client leaves.
  const sleeper = await client.PUT('/api/build/agents', {
    body: { ...minimalAgent('Metrics stream'), max_steps: 4, tools: { apps: ['core'], connections: 'all', disabled_tools: [], approval: 'destructive' } },
  });
  const started = await client.POST('/api/build/agents/{ref}/test', {
    params: { path: { ref: sleeper.data!.data.document.slug } },
    body: { prompt: '/call core.sleep {"ms":5000}' },
  });
  const controller = new AbortController();
  const stream = await fetch(`${s.baseUrl}/api/build/runs/${started.data!.data.run_id}/events`, {
    headers: { authorization: `Bearer ${s.token({ workspace: 'ws-metrics-hooks' })}` },
    signal: controller.signal,
  });
  expect(stream.status).toBe(200);
  await until(async () => value(await scrape(), 'build_api_event_streams_open') === 1);
  controller.abort();
  await until(async () => value(await scrape(), 'build_api_event_streams_open') === 0);
});

test('anything but GET /metrics is 404 on the metrics listener', async () => {
  expect((await fetch(metricsUrl.replace('/metrics', '/'))).status).toBe(404);
  expect((await fetch(metricsUrl, { method: 'POST' })).status).toBe(404);
});
