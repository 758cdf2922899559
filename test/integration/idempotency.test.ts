// Idempotency-Key on the starts, creates and cancels, and retention of finished runs.
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun } from '../helpers/runs';
import { storedWrite } from '../helpers/stored';
import { fingerprintOf } from '../../src/services/idempotency';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

let n = 0;
async function agent(approval: 'write' | 'destructive' = 'destructive') {
  const res = await t.client().PUT('/api/build/agents', {
    body: { ...minimalAgent(`Idem ${++n}`), tools: { apps: ['kv', 'core'], connections: 'all', disabled_tools: [], approval } },
  });
  return res.data!.data.document.slug;
}

const runsOf = async (slug: string) => (await t.client().GET('/api/build/runs', { params: { query: { agent: slug, limit: 100 } } })).data!.data;

function testRun(slug: string, prompt: string, key: string, token?: string) {
  return t.client(token).POST('/api/build/agents/{ref}/test', { params: { path: { ref: slug }, header: { 'Idempotency-Key': key } }, body: { prompt } });
}

test('a repeated start answers the first reply and starts nothing; another body is 422', async () => {
  const slug = await agent();
  const first = await testRun(slug, 'hello', 'start-1');
  const again = await testRun(slug, 'hello', 'start-1');
  expect(first.response.status).toBe(202);
  expect(again.response.status).toBe(202);
  expect(again.data).toEqual(first.data);
  expect(await runsOf(slug)).toHaveLength(1);
  const other = await testRun(slug, 'something else', 'start-1');
  expect(other.response.status).toBe(422);
  expect(other.error!.error).toMatch(/^Idempotency-Key: /);
  // The key is per user: another user's same key is their own request.
  const mine = await testRun(slug, 'hello', 'start-1', t.token({ user: 'user-2' }));
  expect(mine.response.status).toBe(202);
  expect(mine.data!.data.run_id).not.toBe(first.data!.data.run_id);
  await waitForAgentRun(t, first.data!.data.run_id);
});

test('concurrent repeats: one run; every other answer is the same reply or 409 in flight', async () => {
  const slug = await agent();
  const answers = await Promise.all(Array.from({ length: 8 }, () => testRun(slug, 'race', 'race-key')));
  const accepted = answers.filter((a) => a.response.status === 202);
  const inFlight = answers.filter((a) => a.response.status === 409);
  expect(accepted.length + inFlight.length).toBe(8);
  expect(new Set(accepted.map((a) => a.data!.data.run_id)).size).toBe(1);
  for (const a of inFlight) expect(a.error).toEqual({ error: expect.stringContaining('still being handled'), run_id: null });
  expect(await runsOf(slug)).toHaveLength(1);
  const later = await testRun(slug, 'race', 'race-key');
  expect(later.data!.data.run_id).toBe(accepted[0]!.data!.data.run_id);
});

test('a repeated create answers the same 201 with the same ETag and Location and creates one agent', async () => {
  const body = { ...minimalAgent('Created once') };
  const create = () => t.client().PUT('/api/build/agents', { params: { header: { 'Idempotency-Key': 'create-1' } }, body });
  const first = await create();
  const again = await create();
  expect(first.response.status).toBe(201);
  expect(again.response.status).toBe(201);
  expect(again.data).toEqual(first.data);
  for (const h of ['etag', 'location']) expect(again.response.headers.get(h)).toBe(first.response.headers.get(h));
  const list = (await t.client().GET('/api/build/agents')).data!.data;
  expect(list.filter((a) => a.name === 'Created once')).toHaveLength(1);
  // A refusal is a reply too: kept and answered again.
  const bad = () =>
    t.client().PUT('/api/build/agents', { params: { header: { 'Idempotency-Key': 'create-2' } }, body: { ...body, slug: first.data!.data.document.slug } });
  const refused = await bad();
  expect(refused.response.status).toBe(409);
  expect((await bad()).error).toEqual(refused.error);
});

test('a retry is the same request whatever the order of its members and its whitespace (RFC 8785); another value is not', async () => {
  const body = { ...minimalAgent('Reordered'), description: 'first' };
  const send = (text: string) =>
    fetch(`${t.baseUrl}/api/build/agents`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${t.token()}`, 'content-type': 'application/json', 'idempotency-key': 'reordered-1' },
      body: text,
    });
  const first = await send(JSON.stringify(body));
  expect(first.status).toBe(201);
  const created = await first.json();
  // The same members, each object's in reverse order, pretty-printed.
  const reversed = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(reversed)
      : value && typeof value === 'object'
        ? Object.fromEntries(
            Object.entries(value)
              .reverse()
              .map(([k, v]) => [k, reversed(v)]),
          )
        : value;
  const again = await send(JSON.stringify(reversed(body), null, 2));
  expect(again.status).toBe(201);
  expect(await again.json()).toEqual(created);
  const other = await send(JSON.stringify({ ...body, description: 'second' }));
  expect(other.status).toBe(422);
  const list = (await t.client().GET('/api/build/agents')).data!.data;
  expect(list.filter((a) => a.name === 'Reordered')).toHaveLength(1);
});

test('a key stored before the canonical fingerprint (members in the order sent) still replays its retry', async () => {
  const body = { ...minimalAgent('Kept across an upgrade') };
  const create = () => t.client().PUT('/api/build/agents', { params: { header: { 'Idempotency-Key': 'legacy-1' } }, body });
  const first = await create();
  expect(first.response.status).toBe(201);
  const { legacy } = fingerprintOf('PUT', '/api/build/agents', {}, body);
  expect(await storedWrite(t.config, "UPDATE idempotency_keys SET fingerprint = ? WHERE key = 'legacy-1'", [legacy])).toBe(1);
  const again = await create();
  expect(again.response.status).toBe(201);
  expect(again.data).toEqual(first.data);
});

test('a repeated cancel answers the same reply; keys past 24 hours are forgotten', async () => {
  const slug = await agent('write');
  const runId = (
    await t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: slug } }, body: { prompt: '/call kv.set {"key":"k","value":1}' } })
  ).data!.data.run_id;
  await waitForAgentRun(t, runId);
  const cancel = () => t.client().POST('/api/build/runs/{runId}/cancel', { params: { path: { runId }, header: { 'Idempotency-Key': 'cancel-1' } } });
  const first = await cancel();
  expect(first.response.status).toBe(200);
  expect((await cancel()).data).toEqual(first.data);

  await t.service.maintenance.runOnce(Date.now() + 24 * 3600_000 + 60_000);
  const afterWindow = await testRun(slug, 'hello', 'start-old');
  const reused = await testRun(slug, 'a new body for an old key', 'start-old');
  expect(afterWindow.response.status).toBe(202);
  expect(reused.response.status).toBe(422); // still within its own window
});

test('retention: finished runs and their events older than the age are deleted; others stay', async () => {
  const slug = await agent('write');
  const start = (prompt: string) => t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: slug } }, body: { prompt } });
  const done = (await start('hello')).data!.data.run_id;
  const parked = (await start('/call kv.set {"key":"p","value":1}')).data!.data.run_id;
  await waitForAgentRun(t, done);
  await waitForAgentRun(t, parked);
  await t.service.maintenance.runOnce(Date.now() + 29 * 86_400_000);
  expect((await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId: done } } })).response.status).toBe(200);
  await t.service.maintenance.runOnce(Date.now() + 31 * 86_400_000);
  expect((await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId: done } } })).response.status).toBe(404);
  expect(await t.service.store.runs.events(done, 0, 10)).toEqual([]);
  const still = await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId: parked } } });
  expect(still.data!.data.status).toBe('awaiting_approval'); // not finished: kept (it expires on its own)
  expect((await t.service.store.runs.events(parked, 0, 10)).length).toBeGreaterThan(0);
});
