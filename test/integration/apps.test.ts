// Workspace apps backed by MCP servers, and connections with credentials (issue 44), on the store
// under test, against real MCP servers on loopback built with the official server SDK: apps
// created, refreshed and read as the catalog shows them; agents that call their tools (approvals
// held by what the tools' flags say, as far as the app trusts the server); connections whose
// credentials go to the server and never come back; and what a hostile server costs.
import fs from 'node:fs';
import path from 'node:path';
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { startMcpPeer, type McpPeer } from '../helpers/mcp-peer';
import { waitForAgentRun, waitForWorkflowRun } from '../helpers/runs';

let t: TestService;
let open: McpPeer;
let guarded: McpPeer;
let token: string;
const SECRET = 'peer-secret-7f3a9c2e41d8';

beforeAll(async () => {
  // The peers listen on 127.0.0.1: this service may call private addresses (the address rule has its own case below).
  t = await startService({ HTTP_TOOL_ALLOW_PRIVATE: 'true' });
  token = t.token({ user: 'ann', workspace: 'apps-ws' });
  open = await startMcpPeer();
  guarded = await startMcpPeer({ requireToken: SECRET, name: 'guarded-mcp' });
});
afterAll(async () => {
  await Promise.all([open.close(), guarded.close()]);
  await t.close();
});

async function call(method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}, as = token) {
  const res = await fetch(`${t.baseUrl}${urlPath}`, {
    method,
    headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: a reply of any operation, read by each test as it knows it
  return { status: res.status, etag: res.headers.get('etag'), location: res.headers.get('location'), body: (text ? JSON.parse(text) : {}) as any };
}

const app = (slug: string, url: string, mcp: Record<string, unknown> = {}) => ({
  kind: 'service.app/v1',
  slug,
  name: `App ${slug}`,
  description: 'A test server',
  mcp: { url, ...mcp },
});

async function runAgent(slug: string, prompt: string) {
  const started = await call('POST', `/api/build/agents/${slug}/test`, { prompt });
  expect(started.status).toBe(202);
  return waitForAgentRun(t, started.body.data.run_id, token);
}

test('an app is created, listed beside the built-in ones, refreshed into tools the catalog shows, and its flags follow trust', async () => {
  const created = await call('PUT', '/api/build/apps', app('tracker', open.url));
  expect([created.status, created.location, created.body.data]).toMatchObject([
    201,
    '/api/build/apps/tracker',
    { slug: 'tracker', builtin: false, tools: [], refreshed_at: null },
  ]);
  expect(created.etag).toBe(`"${created.body.data.updated_at}"`);
  expect(created.body.data.mcp).toEqual({ url: open.url, auth: 'none', timeout_ms: 10000, output_bytes: 262144, trust_annotations: false });

  const listed = await call('GET', '/api/build/apps');
  expect(listed.body.data.map((a: { slug: string; builtin: boolean }) => `${a.slug}:${a.builtin}`)).toEqual([
    'core:true',
    'email:true',
    'github:true',
    'http:true',
    'kv:true',
    'slack:true',
    'standard-webhooks:true',
    'stripe:true',
    'time:true',
    'tracker:false',
    'whatsapp:true',
  ]);

  const refreshed = await call('POST', '/api/build/apps/tracker/refresh');
  expect(refreshed.status).toBe(200);
  expect(refreshed.body.added).toEqual(['tracker.lookup', 'tracker.close_ticket', 'tracker.comment', 'tracker.slow', 'tracker.huge', 'tracker.fails']);
  expect(refreshed.body.data.server).toMatchObject({ name: 'peer-mcp', version: '1.2.3' });
  // Untrusted: whatever the server says, every tool may write and destroy.
  expect(refreshed.body.data.tools.every((tool: { read_only: boolean; destructive: boolean }) => !tool.read_only && tool.destructive)).toBe(true);

  const current = await call('GET', '/api/build/apps/tracker');
  const trusted = await call('PUT', '/api/build/apps/tracker', app('tracker', open.url, { trust_annotations: true }), { 'if-match': current.etag! });
  expect(trusted.status).toBe(200);
  const again = await call('POST', '/api/build/apps/tracker/refresh');
  const flags = Object.fromEntries(
    again.body.data.tools.map((tool: { slug: string; read_only: boolean; destructive: boolean }) => [tool.slug, [tool.read_only, tool.destructive]]),
  );
  expect(flags).toMatchObject({ 'tracker.lookup': [true, false], 'tracker.close_ticket': [false, true], 'tracker.comment': [false, true] });
  expect([again.body.added, again.body.removed]).toEqual([[], []]);

  // A tool the server adds after the first refresh is offered from the next one on.
  open.tools.push({ name: 'late_tool', description: 'Added later.', annotations: { readOnlyHint: true } });
  expect((await call('GET', '/api/build/catalog/apps/tracker')).body.data.tools.map((tool: { slug: string }) => tool.slug)).not.toContain('tracker.late_tool');
  const later = await call('POST', '/api/build/apps/tracker/refresh');
  expect([later.body.added, later.body.removed]).toEqual([['tracker.late_tool'], []]);

  const catalog = await call('GET', '/api/build/catalog/apps/tracker');
  expect(catalog.body.data.tools.map((tool: { slug: string }) => tool.slug)).toContain('tracker.lookup');
  expect((await call('GET', '/api/build/catalog')).body.data.apps.map((a: { slug: string }) => a.slug)).toContain('tracker');
});

test('slugs: a built-in one is reserved, a taken one is 409, a stale If-Match is 409, a built-in app is neither replaced nor deleted', async () => {
  expect((await call('PUT', '/api/build/apps', app('kv', open.url))).body).toEqual({ error: "body.slug: 'kv' is a built-in app's; choose another slug" });
  expect((await call('PUT', '/api/build/apps', app('tracker', open.url))).status).toBe(409);
  const derived = await call('PUT', '/api/build/apps', { ...app('x', open.url), slug: undefined, name: 'Tracker' });
  expect([derived.status, derived.body.data.slug]).toEqual([201, 'tracker-2']);
  expect((await call('PUT', '/api/build/apps/tracker-2', app('tracker-2', open.url), { 'if-match': '"2020-01-01T00:00:00.000000Z"' })).status).toBe(409);
  expect((await call('DELETE', '/api/build/apps/tracker-2', undefined, { 'if-match': derived.etag! })).status).toBe(204);
  expect((await call('GET', '/api/build/apps/tracker-2')).status).toBe(404);
  expect((await call('DELETE', '/api/build/apps/kv', undefined, { 'if-match': '*' })).body).toEqual({ error: "app 'kv' is built in: it cannot be deleted" });
  const kv = await call('GET', '/api/build/apps/kv');
  expect([kv.status, kv.body.error]).toEqual([200, undefined]);
  expect(kv.body.data).toMatchObject({ slug: 'kv', builtin: true, mcp: null, updated_at: null });
});

test("an agent calls the app's tools: a read-only call runs, a destructive one waits for approval, then runs; the server saw each", async () => {
  const agent = {
    ...minimalAgent('Tracker agent'),
    slug: 'tracker-agent',
    max_steps: 3,
    tools: { apps: ['tracker'], connections: 'all', disabled_tools: [], approval: 'destructive' },
  };
  expect((await call('PUT', '/api/build/agents', agent)).status).toBe(201);
  const read = await runAgent('tracker-agent', '/call tracker.lookup {"id":"7"}');
  expect([read.status, read.tool_calls[0]!.status, read.tool_calls[0]!.output]).toEqual(['succeeded', 'succeeded', '{"id":"7","title":"Ticket 7"}']);

  const held = await runAgent('tracker-agent', '/call tracker.close_ticket {"id":"9"}');
  expect([held.status, held.tool_calls[0]!.status]).toEqual(['awaiting_approval', 'awaiting_approval']);
  expect(open.calls.some((c) => c.tool === 'close_ticket')).toBe(false);
  const decided = await call('POST', `/api/build/runs/${held.id}/approvals/${held.tool_calls[0]!.id}`, { decision: 'approve' });
  expect(decided.status).toBe(200);
  const done = await waitForAgentRun(t, held.id, token);
  expect([done.status, done.tool_calls[0]!.output]).toEqual(['succeeded', 'closed 9']);
  expect(open.calls.filter((c) => c.tool === 'close_ticket').map((c) => c.args)).toEqual([{ id: '9' }]);
});

test("a hostile server costs its bounds: an output past output_bytes is cut with a notice, a slow call fails at timeout_ms, an error result is the call's error", async () => {
  const current = await call('GET', '/api/build/apps/tracker');
  await call('PUT', '/api/build/apps/tracker', app('tracker', open.url, { trust_annotations: true, timeout_ms: 700, output_bytes: 4096 }), {
    'if-match': current.etag!,
  });
  const agent = {
    ...minimalAgent('Bounded'),
    slug: 'bounded',
    max_steps: 3,
    tools: { apps: ['tracker'], connections: 'all', disabled_tools: [], approval: 'destructive' },
  };
  await call('PUT', '/api/build/agents', agent);
  const run = await runAgent('bounded', '/call tracker.huge {"bytes":5000000}\n/call tracker.slow {"ms":5000}\n/call tracker.fails {}');
  // biome-ignore lint/suspicious/noExplicitAny: the three calls' records, read as the spec shows them
  const [huge, slow, fails] = run.tool_calls as any[];
  expect(huge.status).toBe('succeeded');
  expect(huge.output).toMatchObject({ truncated: true, notice: expect.stringContaining('larger than 4096 bytes') });
  expect(huge.output.text).toMatch(/^x{3000,4096}$/);
  expect([slow.status, slow.error]).toEqual(['failed', 'tracker.slow: the MCP server did not answer within 700 ms']);
  expect([fails.status, fails.error]).toEqual(['failed', 'tracker.fails failed: the ticket system is down']);
});

test("connections: credentials go to the server and never come back; a refused token is expired; the call's record names its connection", async () => {
  expect((await call('PUT', '/api/build/apps', app('guarded', guarded.url, { auth: 'connection', trust_annotations: true }))).status).toBe(201);
  // Refreshing needs a connection first.
  expect((await call('POST', '/api/build/apps/guarded/refresh')).status).toBe(409);
  const wrong = await call('PUT', '/api/build/connections', {
    ref: 'guarded:wrong',
    app: 'guarded',
    label: null,
    credentials: { kind: 'bearer', token: 'not-it' },
  });
  expect([wrong.status, wrong.body.data.status, wrong.body.data.last_error]).toEqual([
    201,
    'expired',
    "the MCP server refused the connection's credentials (401)",
  ]);
  const right = await call('PUT', '/api/build/connections', {
    ref: 'guarded:acme',
    app: 'guarded',
    label: 'Acme',
    credentials: { kind: 'bearer', token: SECRET },
  });
  expect([right.status, right.location, right.body.data]).toMatchObject([
    201,
    '/api/build/connections/guarded%3Aacme',
    { status: 'connected', last_error: null, credentials: { kind: 'bearer' } },
  ]);
  expect(JSON.stringify(right.body)).not.toContain(SECRET);
  expect((await call('POST', '/api/build/apps/guarded/refresh', { connection: 'guarded:acme' })).status).toBe(200);
  const listed = await call('GET', '/api/build/connections');
  expect(listed.body.data).toContainEqual({ ref: 'guarded:acme', app: 'guarded', label: 'Acme', status: 'connected' });

  const agent = {
    ...minimalAgent('Guarded'),
    slug: 'guarded-agent',
    max_steps: 3,
    tools: { apps: ['guarded'], connections: ['guarded:acme'], disabled_tools: [], approval: 'destructive' },
  };
  expect((await call('PUT', '/api/build/agents', agent)).status).toBe(201);
  const run = await runAgent('guarded-agent', '/call guarded.lookup {"id":"1"}');
  expect([run.status, run.tool_calls[0]!.connection]).toEqual(['succeeded', 'guarded:acme']);
  expect(guarded.calls.at(-1)).toMatchObject({ tool: 'lookup', args: { id: '1' }, authorization: `Bearer ${SECRET}` });

  // With two usable connections, a call must name one.
  const both = { ...agent, slug: 'guarded-both', tools: { ...agent.tools, connections: 'all' } };
  await call('PUT', '/api/build/agents', both);
  const unnamed = await runAgent('guarded-both', '/call guarded.lookup {"id":"2"}');
  expect(unnamed.tool_calls[0]!.error).toBe(
    "app 'guarded' has several connections this call may use (guarded:acme, guarded:wrong): name one in the 'connection' argument",
  );
  const named = await runAgent('guarded-both', '/call guarded.lookup {"id":"3","connection":"guarded:acme"}');
  expect([named.tool_calls[0]!.status, named.tool_calls[0]!.connection]).toEqual(['succeeded', 'guarded:acme']);
  expect(guarded.calls.at(-1)?.args).toEqual({ id: '3' });

  // The secret is in no file of the data directory, and in no reply.
  for (const file of fs.readdirSync(t.dataDir)) {
    const full = path.join(t.dataDir, file);
    if (fs.statSync(full).isFile()) expect(fs.readFileSync(full).includes(SECRET)).toBe(false);
  }
  expect(JSON.stringify((await call('GET', '/api/build/connections/guarded%3Aacme')).body)).not.toContain(SECRET);
});

test("a workflow's tool step calls an app's tool through the connection it names; with several and none named, the write is refused", async () => {
  const step = (connection?: string) => ({
    id: 'look',
    kind: 'tool',
    tool: 'guarded.lookup',
    args: { id: '{{inputs.id}}' },
    ...(connection && { connection }),
  });
  const workflow = (slug: string, connection?: string) => ({
    kind: 'service.workflow/v1',
    slug,
    name: slug,
    inputs: { id: { description: 'The ticket' } },
    steps: [step(connection)],
  });
  const unnamed = await call('PUT', '/api/build/workflows', workflow('look-unnamed'));
  expect(unnamed.body).toEqual({
    error: "body.steps[0].connection: required: app 'guarded' has several connections (guarded:acme, guarded:wrong); name the one this step uses",
  });
  expect((await call('PUT', '/api/build/workflows', workflow('look-kv', 'kv-none'))).body.error).toBe(
    "body.steps[0].connection: 'kv-none' is not a connection of this workspace; GET /api/build/connections lists them",
  );
  expect((await call('PUT', '/api/build/workflows', workflow('look-named', 'guarded:acme'))).status).toBe(201);
  const started = await call('POST', '/api/build/workflows/look-named/test', { input: { id: '42' } });
  const run = await waitForWorkflowRun(t, started.body.data.run_id, token);
  expect(run.status).toBe('succeeded');
  expect(JSON.stringify(run.step_results)).toContain('Ticket 42');
  expect(guarded.calls.at(-1)).toMatchObject({ tool: 'lookup', args: { id: '42' }, authorization: `Bearer ${SECRET}` });
});

test('a server listing 10,000 tools fails the refresh within its bounds and keeps the tools stored before', async () => {
  const crowded = await startMcpPeer({ tools: Array.from({ length: 10_000 }, (_, i) => ({ name: `tool_${i}`, description: 'x'.repeat(100) })) });
  try {
    await call('PUT', '/api/build/apps', app('crowded', crowded.url));
    const refreshed = await call('POST', '/api/build/apps/crowded/refresh');
    expect([refreshed.status, refreshed.body]).toEqual([502, { error: "app 'crowded': the MCP server lists more than 500 tools, the most an app may have" }]);
    expect((await call('GET', '/api/build/apps/crowded')).body.data).toMatchObject({
      tools: [],
      refresh_error: 'the MCP server lists more than 500 tools, the most an app may have',
    });
  } finally {
    await crowded.close();
  }
});

test('what still uses an app or a connection keeps it; another workspace sees none of it', async () => {
  const inUse = await call('GET', '/api/build/apps/guarded');
  const refused = await call('DELETE', '/api/build/apps/guarded', undefined, { 'if-match': inUse.etag! });
  expect(refused.body.error).toBe(
    "app 'guarded' is in use: agents guarded-agent, guarded-both; workflows look-named; connections guarded:acme, guarded:wrong; remove those uses first",
  );
  const connection = await call('GET', '/api/build/connections/guarded%3Aacme');
  expect((await call('DELETE', '/api/build/connections/guarded%3Aacme', undefined, { 'if-match': connection.etag! })).body.error).toBe(
    "connection 'guarded:acme' is named by agents guarded-agent; workflows look-named; remove those first",
  );
  const other = t.token({ user: 'bob', workspace: 'other-ws' });
  expect((await call('GET', '/api/build/apps/guarded', undefined, {}, other)).status).toBe(404);
  expect((await call('GET', '/api/build/connections', undefined, {}, other)).body.data).toEqual([]);
  expect((await call('GET', '/api/build/apps', undefined, {}, other)).body.data.map((a: { slug: string }) => a.slug)).toEqual([
    'core',
    'email',
    'github',
    'http',
    'kv',
    'slack',
    'standard-webhooks',
    'stripe',
    'time',
    'whatsapp',
  ]);
});

test("the outbound address rule holds for an app's server: a loopback server is refused when private addresses are not allowed", async () => {
  const strict = await startService({ HTTP_TOOL_ALLOW_PRIVATE: 'false' });
  try {
    const as = strict.token({ workspace: 'strict' });
    const put = await fetch(`${strict.baseUrl}/api/build/apps`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' },
      body: JSON.stringify(app('local', open.url)),
    });
    expect(put.status).toBe(201);
    const refreshed = await fetch(`${strict.baseUrl}/api/build/apps/local/refresh`, { method: 'POST', headers: { authorization: `Bearer ${as}` } });
    expect([refreshed.status, await refreshed.json()]).toEqual([502, { error: "app 'local': refused: 127.0.0.1 is not a public (global unicast) address" }]);
    const read = (await (await fetch(`${strict.baseUrl}/api/build/apps/local`, { headers: { authorization: `Bearer ${as}` } })).json()) as { data: unknown };
    expect(read.data).toMatchObject({ refresh_error: 'refused: 127.0.0.1 is not a public (global unicast) address', tools: [] });
  } finally {
    await strict.close();
  }
});
