// Eval datasets over HTTP (docs/evals.md): create, read, list with pages, replace with If-Match,
// versions (list, read, diff, restore), delete; the rules beyond the schema with each problem's
// path; the size limits; another workspace sees none of it; the MCP tools. Every reply is checked
// against openapi.yaml by the service (validateResponses).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { components } from '../../generated/api';
import { casePrompt } from '../../src/domain/evals/dataset';
import { startService, type TestService } from '../helpers/service';

type DatasetCreate = components['schemas']['EvalDatasetCreate'];
let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

const dataset = (slug: string, overrides: Partial<DatasetCreate> = {}): DatasetCreate => ({
  kind: 'service.eval-dataset/v1',
  slug,
  name: `The ${slug} cases`,
  cases: [
    { id: 'greeting', prompt: 'Say hello to {{name}}.', variables: { name: 'Ada' }, criteria: [{ type: 'contains', value: 'Ada' }] },
    { id: 'lookup', prompt: 'Where is my order?', input: { order_id: 'A-1' } },
  ],
  ...overrides,
});

async function create(body: DatasetCreate, token = t.token()) {
  const res = await t.client(token).PUT('/api/build/eval-datasets', { body });
  expect(res.response.status).toBe(201);
  return { doc: res.data!.data.document, etag: res.response.headers.get('etag')!, result: res.data!.data, location: res.response.headers.get('location') };
}

function send(method: string, path: string, body?: string, headers: Record<string, string> = {}, token = t.token()) {
  return fetch(`${t.baseUrl}${path}`, { method, body, headers: { authorization: `Bearer ${token}`, ...headers } });
}

test('create fills every member, answers 201 with ETag and Location, and reads back by slug and id', async () => {
  const { doc, etag, result, location } = await create(dataset('refunds'));
  expect(doc).toEqual({
    kind: 'service.eval-dataset/v1',
    id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    slug: 'refunds',
    version: 1,
    updated_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
    name: 'The refunds cases',
    description: null,
    cases: dataset('refunds').cases,
  });
  expect(etag).toBe(`"${doc.updated_at}"`);
  expect(location).toBe('/api/build/eval-datasets/refunds');
  expect(result).toMatchObject({ version: 1, applied: ['document'], changes: ["eval dataset 'refunds' created with 2 cases"] });
  for (const ref of ['refunds', doc.id]) {
    const read = await t.client().GET('/api/build/eval-datasets/{dataset}', { params: { path: { dataset: ref } } });
    expect(read.data!.data).toEqual(doc);
    expect(read.response.headers.get('etag')).toBe(etag);
  }
  expect((await send('GET', '/api/build/eval-datasets/refunds', undefined, { 'if-none-match': etag })).status).toBe(304);
  const taken = await t.client().PUT('/api/build/eval-datasets', { body: dataset('refunds', { name: 'Other' }) });
  expect(taken.response.status).toBe(409);
  expect(taken.error).toEqual({ error: "body.slug: 'refunds' is taken in this workspace; choose another slug" });
});

test('a case asks its prompt with its variables filled in, then its input', () => {
  const [greeting, lookup] = dataset('x').cases;
  expect(casePrompt(greeting!)).toBe('Say hello to Ada.');
  expect(casePrompt(lookup!)).toBe('Where is my order?\n\nInput:\n{"order_id":"A-1"}');
  expect(casePrompt({ id: 'a', prompt: '{{ name }} {{missing}} {{name', variables: { name: 'Bo' } })).toBe('Bo {{missing}} {{name');
  expect(casePrompt({ id: 'b', input: { n: 1 } })).toBe('Input:\n{"n":1}');
});

test.each([
  [
    {
      cases: [
        { id: 'a', prompt: 'x' },
        { id: 'a', prompt: 'y' },
      ],
    },
    "body.cases[1].id: 'a' is also the id of body.cases[0]; case ids are unique",
  ],
  [{ cases: [{ id: 'a' }] }, 'body.cases[0]: has neither prompt nor input; a case asks the agent something'],
  [
    { cases: [{ id: 'a', prompt: 'x', criteria: [{ type: 'regex', pattern: '(?=x)' }] }] },
    'body.cases[0].criteria[0].pattern: is not a pattern the linear-time engine takes',
  ],
  [
    { cases: [{ id: 'a', prompt: 'x', criteria: [{ type: 'tool_called', tool: 'kv.nope' }] }] },
    "body.cases[0].criteria[0].tool: 'kv.nope' is not a tool of the catalog",
  ],
  [{ cases: [{ id: 'a', prompt: '{{v}}'.repeat(10), variables: { v: 'x'.repeat(4000) } }] }, 'body.cases[0]: asks 40000 characters'],
  [{ cases: [] }, 'body.cases: must have at least 1 item'],
  [{ cases: [{ id: 'Bad', prompt: 'x' }] }, 'body.cases[0].id: must be text matching'],
  [{ slug: 'Not A Slug' }, 'body.slug: must be lowercase letters and digits'],
])('a dataset that breaks a rule is 400 naming its path, and nothing is written (case %#)', async (overrides, message) => {
  const res = await t.client().PUT('/api/build/eval-datasets', { body: dataset('broken', overrides as Partial<DatasetCreate>) });
  expect(res.response.status).toBe(400);
  expect(res.error!.error).toContain(message);
  expect((await t.client().GET('/api/build/eval-datasets/{dataset}', { params: { path: { dataset: 'broken' } } })).response.status).toBe(404);
});

test('a dataset up to 200 cases and 512 KiB as stored; a body up to 1 MiB', async () => {
  const big = (n: number, size: number) => dataset('big', { cases: Array.from({ length: n }, (_, i) => ({ id: `c${i}`, prompt: 'p'.repeat(size) })) });
  expect((await t.client().PUT('/api/build/eval-datasets', { body: big(201, 10) })).error!.error).toContain('body.cases: must have at most 200 items');
  const tooLarge = await t.client().PUT('/api/build/eval-datasets', { body: big(200, 3000) });
  expect(tooLarge.response.status).toBe(400);
  expect(tooLarge.error!.error).toMatch(/^body: the dataset as stored is \d+ bytes; at most 524288 \(512 KiB\)$/);
  expect((await t.client().PUT('/api/build/eval-datasets', { body: big(200, 2000) })).response.status).toBe(201);
  const huge = await send('PUT', '/api/build/eval-datasets', JSON.stringify({ padding: 'x'.repeat(1100 * 1024) }), { 'content-type': 'application/json' });
  expect(huge.status).toBe(413);
});

test('the list shows id, slug, name, case count, version and stamp by slug, and pages with a cursor', async () => {
  const token = t.token({ workspace: 'ws-list' });
  for (const slug of ['c-set', 'a-set', 'b-set']) await create(dataset(slug), token);
  const whole = await t.client(token).GET('/api/build/eval-datasets');
  expect(whole.data!.data.map((d) => d.slug)).toEqual(['a-set', 'b-set', 'c-set']);
  expect(whole.data!.data[0]).toEqual({ id: expect.any(String), slug: 'a-set', name: 'The a-set cases', cases: 2, version: 1, updated_at: expect.any(String) });
  const first = await t.client(token).GET('/api/build/eval-datasets', { params: { query: { limit: 2 } } });
  expect(first.data!.data.map((d) => d.slug)).toEqual(['a-set', 'b-set']);
  const next = await t.client(token).GET('/api/build/eval-datasets', { params: { query: { limit: 2, cursor: first.data!.next_cursor! } } });
  expect(next.data).toEqual({ data: [expect.objectContaining({ slug: 'c-set' })], next_cursor: null });
});

test('replace with If-Match keeps versions; a stale stamp is 409 with the current; diff and restore', async () => {
  const { doc, etag } = await create(dataset('versioned'));
  const body = { ...doc, cases: [...doc.cases, { id: 'angry', prompt: 'Refund me now.' }] };
  const path = { dataset: 'versioned' };
  const replaced = await t.client().PUT('/api/build/eval-datasets/{dataset}', { params: { path, header: { 'If-Match': etag } }, body });
  expect(replaced.response.status).toBe(200);
  expect(replaced.data!.data).toMatchObject({ version: 2, changes: ["case 'angry' added"], document: { version: 2, cases: body.cases } });
  const stale = await t.client().PUT('/api/build/eval-datasets/{dataset}', { params: { path, header: { 'If-Match': etag } }, body });
  expect(stale.response.status).toBe(409);
  expect((stale.error as unknown as { current: { version: number } }).current.version).toBe(2);
  const renamed = await t.client().PUT('/api/build/eval-datasets/{dataset}', {
    params: { path, header: { 'If-Match': replaced.response.headers.get('etag')! } },
    body: { ...replaced.data!.data.document, slug: 'other' },
  });
  expect(renamed.error!.error).toContain("body.slug: 'other' differs from the dataset's slug 'versioned'");
  const versions = await t.client().GET('/api/build/eval-datasets/{dataset}/versions', { params: { path } });
  expect(versions.data!.data.map((v) => [v.version, v.changes])).toEqual([
    [2, ["case 'angry' added"]],
    [1, ["eval dataset 'versioned' created with 2 cases"]],
  ]);
  const v1 = await t.client().GET('/api/build/eval-datasets/{dataset}/versions/{version}', { params: { path: { ...path, version: '1' } } });
  expect(v1.data!.data).toEqual(doc);
  const diff = await t.client().GET('/api/build/eval-datasets/{dataset}/versions/{version}/diff', { params: { path: { ...path, version: '1' } } });
  expect(diff.data!.data.patch).toContainEqual({ op: 'add', path: '/cases/2', value: { id: 'angry', prompt: 'Refund me now.' } });
  const restored = await t.client().POST('/api/build/eval-datasets/{dataset}/versions/{version}/restore', {
    params: { path: { ...path, version: '1' }, header: { 'If-Match': replaced.response.headers.get('etag')! } },
  });
  expect(restored.data!.data).toMatchObject({ version: 3, changes: ['restored from version 1', "case 'angry' removed"], document: { cases: doc.cases } });
  expect((await t.client().DELETE('/api/build/eval-datasets/{dataset}', { params: { path } })).response.status).toBe(200);
  expect((await t.client().GET('/api/build/eval-datasets/{dataset}/versions', { params: { path } })).response.status).toBe(404);
});

test('another workspace sees none of it', async () => {
  const { doc, etag } = await create(dataset('private-set'));
  const other = t.token({ workspace: 'ws-other' });
  expect((await t.client(other).GET('/api/build/eval-datasets')).data!.data).toEqual([]);
  for (const [method, path, body, headers] of [
    ['GET', '/api/build/eval-datasets/private-set'],
    ['GET', `/api/build/eval-datasets/${doc.id}`],
    ['GET', '/api/build/eval-datasets/private-set/versions'],
    ['GET', '/api/build/eval-datasets/private-set/versions/1'],
    ['GET', '/api/build/eval-datasets/private-set/versions/1/diff'],
    ['POST', '/api/build/eval-datasets/private-set/versions/1/restore', undefined, { 'if-match': etag }],
    ['PUT', '/api/build/eval-datasets/private-set', JSON.stringify(doc), { 'if-match': etag, 'content-type': 'application/json' }],
    ['DELETE', '/api/build/eval-datasets/private-set'],
  ] as [string, string, string | undefined, Record<string, string> | undefined][]) {
    const res = await send(method, path, body, headers, other);
    expect([method, path, res.status]).toEqual([method, path, 404]);
  }
  expect((await t.client(other).PUT('/api/build/eval-datasets', { body: dataset('private-set') })).response.status).toBe(201);
});

test('over MCP: create_eval_dataset and get_eval_dataset', async () => {
  const client = new Client({ name: 'datasets-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${t.token({ workspace: 'ws-mcp' })}` } },
    }),
  );
  try {
    type Result = { isError?: boolean; content: { text: string }[]; structuredContent?: Record<string, unknown> };
    const created = (await client.callTool({ name: 'create_eval_dataset', arguments: { body: dataset('over-mcp') } })) as Result;
    expect(created.isError).toBeFalsy();
    expect(created.structuredContent).toMatchObject({ version: 1, document: { slug: 'over-mcp' } });
    const read = (await client.callTool({ name: 'get_eval_dataset', arguments: { dataset: 'over-mcp' } })) as Result;
    expect(read.structuredContent).toMatchObject({ slug: 'over-mcp', cases: dataset('over-mcp').cases });
  } finally {
    await client.close();
  }
});
