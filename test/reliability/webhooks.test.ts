// The webhook URL a write hands out, against a real server process: a delivery is a run that
// finishes; a repeat is the same run; the URL's secret appears in no log line; after a restart the
// URL still works and the repeat is still recognised (the delivery rows are in the database).
import { startServer, type ServerProcess } from './server';
import { minimalAgent } from '../helpers/fixtures';

let s: ServerProcess;
beforeAll(async () => {
  s = await startServer();
});
afterAll(() => s.dispose());

async function waitForRun(runId: string) {
  for (let i = 0; i < 200; i++) {
    const res = await s.client(s.token({ user: 'a-colleague' })).GET('/api/build/runs/{runId}', { params: { path: { runId } } });
    if (res.data && !['queued', 'running'].includes(res.data.data.status)) return res.data.data;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`run ${runId} did not finish`);
}

test('deliver, read the run, repeat, restart, deliver again', async () => {
  const created = await s.client().PUT('/api/build/agents', { body: { ...minimalAgent('Inbound'), triggers: [{ kind: 'webhook', name: 'CRM' }] } });
  expect(created.response.status).toBe(201);
  const { document, webhook_urls } = created.data!.data;
  await s.client().POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: document.id }, header: { 'If-Match': created.response.headers.get('etag')! } },
    body: { status: 'active' },
  });
  const path = new URL(webhook_urls![0]!.url).pathname;
  const secret = path.split('/').pop()!;
  const deliver = (id: string) =>
    fetch(`${s.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': id }, body: '{"order":1}' });

  const first = await deliver('evt_1');
  expect(first.status).toBe(202);
  const { run_id } = ((await first.json()) as { data: { run_id: string } }).data;
  expect(await waitForRun(run_id)).toMatchObject({ status: 'succeeded', source: 'webhook', trigger_id: webhook_urls![0]!.trigger_id });
  const repeat = await deliver('evt_1');
  expect(((await repeat.json()) as { data: { run_id: string; status: string } }).data).toEqual({ run_id, status: 'succeeded' });

  await s.kill('SIGKILL');
  await s.restart();
  const afterRestart = await deliver('evt_1');
  expect(((await afterRestart.json()) as { data: { run_id: string } }).data.run_id).toBe(run_id);
  const next = await deliver('evt_2');
  expect(next.status).toBe(202);
  expect(await waitForRun(((await next.json()) as { data: { run_id: string } }).data.run_id)).toMatchObject({ status: 'succeeded' });

  expect(s.logs.some((line) => line.includes('/hooks/'))).toBe(true); // the deliveries were logged
  expect(s.logs.filter((line) => line.includes(secret))).toEqual([]); // their secret was not
}, 60_000);
