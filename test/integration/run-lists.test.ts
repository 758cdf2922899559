// Listing runs: what the caller may read, newest first, filters, and cursor pages that neither
// repeat nor skip a run while others are inserted.
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';

let t: TestService;
let agentId: string;
let hookUrl: string;
beforeAll(async () => {
  t = await startService();
  const created = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Listed'), triggers: [{ kind: 'webhook', name: 'In' }] } });
  agentId = created.data!.data.document.id;
  hookUrl = created.data!.data.webhook_urls![0]!.url.replace('http://build.test', t.baseUrl);
  await t.client().POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: agentId }, header: { 'If-Match': created.response.headers.get('etag')! } },
    body: { status: 'active' },
  });
  await t.client().PUT('/api/build/agents', { body: minimalAgent('Other agent') });
});
afterAll(() => t.close());

const testRun = async (user = 'user-1', ref = 'listed') =>
  (await t.client(t.token({ user })).POST('/api/build/agents/{ref}/test', { params: { path: { ref } }, body: { prompt: 'hi' } })).data!.data.run_id;
const webhookRun = async () => ((await (await fetch(hookUrl, { method: 'POST', body: '{}' })).json()) as { data: { run_id: string } }).data.run_id;

async function listAll(user: string, query: Record<string, string | string[]> = {}, limit = 3): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1000; page++) {
    const res = await t.client(t.token({ user })).GET('/api/build/runs', { params: { query: { ...query, limit, ...(cursor && { cursor }) } as never } });
    expect(res.response.status).toBe(200);
    seen.push(...res.data!.data.map((r) => r.id));
    const next = res.data!.next_cursor;
    expect(res.response.headers.get('link')).toBe(
      next
        ? `</api/build/runs?${new URLSearchParams({ ...query, limit: String(limit), ...(cursor && { cursor }), cursor: next } as Record<string, string>).toString()}>; rel="next"`
        : null,
    );
    if (!next) return seen;
    cursor = next;
  }
  throw new Error('too many pages');
}

test("a caller lists their own test runs and the workspace's triggered runs, newest first, across pages", async () => {
  const mine = [await testRun(), await testRun(), await testRun()];
  const theirs = [await testRun('user-2')];
  const hooks = [await webhookRun(), await webhookRun()];
  const other = [await testRun('user-1', 'other-agent')];
  await t.service.runner.idle();
  const expected = [...mine, ...hooks, ...other].sort().reverse();
  expect(await listAll('user-1')).toEqual(expected);
  expect(await listAll('user-2')).toEqual([...theirs, ...hooks].sort().reverse());
  expect(await listAll('someone', {}, 100)).toEqual([...hooks].sort().reverse());
  expect((await t.client(t.token({ workspace: 'ws-other' })).GET('/api/build/runs', {})).data).toEqual({ data: [], next_cursor: null });

  const first = await t.client().GET('/api/build/runs', { params: { query: { limit: 1 } } });
  expect(first.data!.data[0]).toEqual({
    id: expected[0],
    agent: { slug: 'other-agent', name: 'Other agent' },
    status: 'succeeded',
    source: 'test',
    trigger_id: null,
    credits: 1,
    error: null,
    started_at: expect.any(String),
    run_started_at: expect.any(String),
    finished_at: expect.any(String),
  });
});

test('filters: agent, status (repeatable), source, started_after and started_before', async () => {
  const before = new Date().toISOString();
  await new Promise((resolve) => setTimeout(resolve, 5));
  const hook = await webhookRun();
  const test1 = await testRun();
  await t.service.runner.idle();
  expect(await listAll('user-1', { agent: agentId, source: 'webhook', started_after: before })).toEqual([hook]);
  expect(await listAll('user-1', { agent: 'listed', started_after: before })).toEqual([test1, hook]);
  expect(await listAll('user-1', { agent: 'other-agent', started_after: before })).toEqual([]);
  expect(await listAll('user-1', { status: ['failed', 'refused'] })).toEqual([]);
  expect((await listAll('user-1', { status: ['succeeded'], started_before: before })).includes(hook)).toBe(false);
});

test('a bad cursor or filter is 400 naming the parameter', async () => {
  const get = (query: string) =>
    fetch(`${t.baseUrl}/api/build/runs?${query}`, { headers: { authorization: `Bearer ${t.token()}` } }).then(async (r) => [
      r.status,
      ((await r.json()) as { error: string }).error,
    ]);
  expect(await get('cursor=not-a-cursor')).toEqual([400, 'cursor: not a cursor of this list; pass the next_cursor of the previous page as it was given']);
  expect((await get('limit=0'))[0]).toBe(400);
  expect((await get('limit=0'))[1]).toMatch(/limit/);
  // Numbers JavaScript would read from text, but not integers as the spec writes them.
  for (const limit of ['1e1', '10.0', '0x10', '%2B5', '%205', '5%20', ''])
    expect([limit, ...(await get(`limit=${limit}`))]).toEqual([limit, 400, 'query.limit: must be an integer written in decimal digits']);
  expect((await get('limit=010'))[0]).toBe(200);
  expect((await get('status=done'))[1]).toMatch(/status/);
  expect((await get('source=fax'))[1]).toMatch(/source/);
  expect((await get('started_after=yesterday'))[1]).toMatch(/started_after/);
  expect(await get('agent=no-such-agent')).toEqual([400, "agent: 'no-such-agent' is not an agent of this workspace"]);
});

test('paging while runs are inserted: no run shown twice, none of those that existed skipped', async () => {
  const existing = await listAll('user-1', {}, 100);
  const seen: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    await Promise.all([webhookRun(), testRun()]); // new runs land before and during every page
    const res = await t.client().GET('/api/build/runs', { params: { query: { limit: 2, ...(cursor && { cursor }) } } });
    seen.push(...res.data!.data.map((r) => r.id));
    if (!res.data!.next_cursor) break;
    cursor = res.data!.next_cursor;
  }
  expect(new Set(seen).size).toBe(seen.length);
  for (const id of existing) expect(seen).toContain(id);
  await t.service.runner.idle();
});

test("workflow runs list the same way, by workflow id or slug, a deleted workflow's by its id", async () => {
  await t.client().PUT('/api/build/workflows', {
    body: { kind: 'service.workflow/v1', slug: 'listed-wf', name: 'W', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] },
  });
  const workflowId = (await t.service.store.workflows.find('ws-1', 'listed-wf'))!.id;
  const run = (await t.client().POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'listed-wf' } }, body: {} })).data!.data.run_id;
  await t.service.runner.idle();
  const bySlug = await t.client().GET('/api/build/workflow-runs', { params: { query: { workflow: 'listed-wf' } } });
  expect(bySlug.data!.data).toEqual([
    {
      id: run,
      workflow_id: workflowId,
      workflow_version_id: `${workflowId}@1`,
      status: 'succeeded',
      source: 'test',
      trigger_id: null,
      credits: 1,
      error: null,
      accepted_at: expect.any(String),
      started_at: expect.any(String),
      finished_at: expect.any(String),
    },
  ]);
  await t.client().DELETE('/api/build/workflows/{ref}', { params: { path: { ref: 'listed-wf' } } });
  const byId = await t.client().GET('/api/build/workflow-runs', { params: { query: { workflow: workflowId } } });
  expect(byId.data!.data.map((r) => r.id)).toEqual([run]);
  const gone = await t.client().GET('/api/build/workflow-runs', { params: { query: { workflow: 'listed-wf' } } });
  expect(gone.response.status).toBe(400);
});
