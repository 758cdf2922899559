// Text no field needs, which one store could not keep: U+0000 is refused wherever a request carries
// it (400 naming where, on both stores; PostgreSQL's text cannot hold it and answered 500), and
// replaced where a run makes it; JSON nested deeper than any body may be is not stored as JSON.
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun, waitForWorkflowRun } from '../helpers/runs';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

const nulError = (path: string) => ({ error: `${path}: must not contain the character U+0000 (NUL)` });

test('U+0000 in a document, a member name, a path or a query parameter: 400 naming where, nothing written', async () => {
  const named = await t.client().PUT('/api/build/agents', { body: minimalAgent('N\u0000ul') });
  expect([named.response.status, named.error]).toEqual([400, nulError('body.name')]);
  const member = await t.client().POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'any' } }, body: { input: { 'a\u0000b': 1 } } });
  expect([member.response.status, member.error]).toEqual([400, nulError('body.input["a\\u0000b"]')]);
  const nested = await t.client().POST('/api/build/workflows/validate', {
    body: { kind: 'service.workflow/v1', slug: 'nul', name: 'N', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo', args: { deep: [{ s: 'x\u0000' }] } }] },
  });
  expect([nested.response.status, nested.error]).toEqual([400, nulError('body.steps[0].args.deep[0].s')]);
  const inPath = await fetch(`${t.baseUrl}/api/build/runs/00000000-0000-4000-8000-000000000000/approvals/%00`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.token()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ decision: 'approve' }),
  });
  expect([inPath.status, await inPath.json()]).toEqual([400, nulError('path.callId')]);
  const inQuery = await fetch(`${t.baseUrl}/api/build/runs?agent=%00`, { headers: { authorization: `Bearer ${t.token()}` } });
  expect([inQuery.status, await inQuery.json()]).toEqual([400, nulError('query.agent')]);
  const listed = await t.client().GET('/api/build/agents');
  expect(listed.data!.data.filter((a) => a.name.includes('\u0000'))).toEqual([]);
});

test('a member named __proto__, however escaped, anywhere in a body: 400 naming where, nothing written', async () => {
  const workflow = (args: string) =>
    `{"kind":"service.workflow/v1","slug":"proto-member","name":"P","steps":[{"id":"a","kind":"tool","tool":"core.echo","args":${args}}]}`;
  for (const member of ['"__proto__"', '"\\u005f_proto__"']) {
    const res = await fetch(`${t.baseUrl}/api/build/workflows`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${t.token()}`, 'content-type': 'application/json' },
      body: workflow(`{"deep":[{${member}:{"polluted":true}}]}`),
    });
    expect([res.status, await res.json()]).toEqual([
      400,
      { error: 'body.steps[0].args.deep[0].__proto__: the member name __proto__ is refused (it names the prototype of every JavaScript object)' },
    ]);
  }
  expect((await t.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: 'proto-member' } } })).response.status).toBe(404);
  // The other names a prototype answers to are a document's to use (a diff's patch folds them: domain/json-patch.ts).
  const res = await fetch(`${t.baseUrl}/api/build/workflows`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${t.token()}`, 'content-type': 'application/json' },
    body: workflow('{"constructor":{"x":1},"prototype":2}'),
  });
  expect(res.status).toBe(201);
});

test("a NUL a run makes (a tool's error) is kept inside the run's JSON, and as U+FFFD in its error text, on either store", async () => {
  const created = await t.client().PUT('/api/build/agents', {
    body: {
      ...minimalAgent('Failer'),
      slug: 'failer',
      max_steps: 3,
      tools: { apps: ['core'], connections: 'all', disabled_tools: [], approval: 'destructive' },
    },
  });
  expect(created.response.status).toBe(201);
  // The prompt holds the six characters \u0000, which the model's JSON turns into the character.
  const prompt = '/call core.fail {"message":"a\\u0000b"}';
  const started = await t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: 'failer' } }, body: { prompt } });
  expect(started.response.status).toBe(202);
  const run = await waitForAgentRun(t, started.data!.data.run_id);
  expect(run.status).toBe('succeeded'); // the model is told of the failure and answers
  expect(run.tool_calls[0]).toMatchObject({ tool: 'core.fail', status: 'failed', error: 'a\u0000b' });
  expect(run.final_text).toBe('Called 1 tool.\ncore.fail: error: a\u0000b');

  // A workflow that fails with that text: the run's error is a column of its own.
  const wf = await t.client().PUT('/api/build/workflows', {
    body: {
      kind: 'service.workflow/v1',
      slug: 'nul-error',
      name: 'N',
      steps: [
        { id: 'ask', kind: 'agent', agent: 'failer', prompt },
        { id: 'fail', kind: 'tool', tool: 'core.fail', args: { message: '{{steps.ask.output}}' }, after: ['ask'] },
      ],
    },
  });
  expect(wf.response.status).toBe(201);
  const wfRun = await t.client().POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'nul-error' } }, body: {} });
  const ended = await waitForWorkflowRun(t, wfRun.data!.data.run_id);
  expect(ended.status).toBe('failed');
  expect(ended.error).toBe("step 'fail' failed: Called 1 tool.\ncore.fail: error: a\uFFFDb");
  expect(ended.step_results.fail!.error).toBe('Called 1 tool.\ncore.fail: error: a\u0000b');
});

test('a webhook delivery of JSON nested deeper than 64 levels reaches its run as text, not as JSON', async () => {
  const created = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Deep'), triggers: [{ kind: 'webhook', name: 'In' }] } });
  const etag = created.response.headers.get('etag')!;
  await t.client().POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: created.data!.data.document.id }, header: { 'If-Match': etag } },
    body: { status: 'active' },
  });
  const url = created.data!.data.webhook_urls![0]!.url.replace('http://build.test', t.baseUrl);
  const deep = `${'['.repeat(6000)}${']'.repeat(6000)}`;
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: deep });
  expect(res.status).toBe(202);
  const { data } = (await res.json()) as { data: { run_id: string } };
  const delivered = async (runId: string) => {
    const run = await waitForAgentRun(t, runId, t.token());
    expect(run.status).toBe('succeeded');
    return (JSON.parse(run.transcript[0]!.content!.split('\n').pop()!) as { body: unknown }).body;
  };
  expect(await delivered(data.run_id)).toBe(deep);

  const shallow = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[[1]]' });
  expect(await delivered(((await shallow.json()) as { data: { run_id: string } }).data.run_id)).toEqual([[1]]);
});

test('a webhook URL with U+0000 names no trigger: 404, on either store', async () => {
  const res = await fetch(`${t.baseUrl}/hooks/%00/whk_x`, { method: 'POST', body: '{}' });
  expect([res.status, await res.json()]).toEqual([404, { error: 'no webhook at this URL' }]);
  const secret = await fetch(`${t.baseUrl}/hooks/00000000-0000-4000-8000-000000000000/%00`, { method: 'POST', body: '{}' });
  expect(secret.status).toBe(404);
});
