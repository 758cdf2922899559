// Request quotas per workspace and per caller (services/rate-limits.ts) over real HTTP, on the store
// under test: the RateLimit-Policy and RateLimit fields on every response to an authenticated
// request (parsed with an RFC 8941 parser of its own, structured-headers), 429 with Retry-After
// beyond a quota, nothing carried out when refused, lower quotas for run starts and validations,
// callers and workspaces counted apart, a new window, concurrent requests never admitted beyond the
// quota, MCP requests and tool calls counted, and quotas turned off.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';

// structured-headers types itself for ESM resolution only; its CommonJS build is what loads here.
const { parseList } = require('structured-headers') as { parseList(value: string): [unknown, Map<string, unknown>][] };

type Fields = Record<string, Record<string, unknown>>;

/** A Structured Field list of policies as { name: { parameter: value } }. */
function fields(value: string | null): Fields {
  if (value === null) throw new Error('the field is missing');
  const out: Fields = {};
  for (const [item, params] of parseList(value)) out[String(item)] = Object.fromEntries(params);
  return out;
}

async function call(t: TestService, path: string, init: RequestInit & { token?: string } = {}) {
  const { token = t.token(), ...rest } = init;
  const res = await fetch(`${t.baseUrl}/api/build${path}`, {
    ...rest,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...rest.headers },
  });
  const body = await res.text();
  return { status: res.status, headers: res.headers, body: body ? JSON.parse(body) : undefined };
}

describe('small quotas', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({
      RATE_LIMIT_WINDOW_SECONDS: '3600',
      RATE_LIMIT_CALLER: '5',
      RATE_LIMIT_WORKSPACE: '8',
      RATE_LIMIT_CALLER_RUNS: '2',
      RATE_LIMIT_WORKSPACE_RUNS: '100',
      RATE_LIMIT_CALLER_VALIDATIONS: '1',
      RATE_LIMIT_WORKSPACE_VALIDATIONS: '100',
    });
  });
  afterAll(() => t.close());

  test('a caller: RateLimit counts down on every response, then 429 with Retry-After and r=0; another caller and workspace go on', async () => {
    const token = t.token({ user: 'counted', workspace: 'ws-count' });
    const remaining: number[] = [];
    for (let i = 0; i < 5; i++) {
      // A 404 counts like a 200: every request does.
      const res = await call(t, i % 2 ? '/agents' : '/agents/no-such-agent', { token });
      expect(res.status).toBe(i % 2 ? 200 : 404);
      expect(fields(res.headers.get('ratelimit-policy'))).toEqual({ workspace: { q: 8, w: 3600 }, caller: { q: 5, w: 3600 } });
      const state = fields(res.headers.get('ratelimit'));
      remaining.push(state.caller!.r as number);
      expect(state.workspace!.r).toBe(8 - i - 1);
      expect(state.caller!.t).toBeGreaterThan(0);
      expect(state.caller!.t).toBeLessThanOrEqual(3600);
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0]);

    const refused = await call(t, '/agents', { token });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: expect.stringMatching(/^rate limit 'caller': this caller's quota of 5 requests per 3600 s is used up; retry after \d+ s$/),
    });
    const retryAfter = Number(refused.headers.get('retry-after'));
    const state = fields(refused.headers.get('ratelimit'));
    expect(state.caller!.r).toBe(0);
    expect(retryAfter).toBe(state.caller!.t);
    // Refused requests spend nothing: the workspace still has 3 left for its other callers.
    expect(state.workspace!.r).toBe(3);

    const other = await call(t, '/agents', { token: t.token({ user: 'other', workspace: 'ws-count' }) });
    expect(other.status).toBe(200);
    expect(fields(other.headers.get('ratelimit')).caller!.r).toBe(4);
    expect((await call(t, '/agents', { token: t.token({ user: 'counted', workspace: 'ws-elsewhere' }) })).status).toBe(200);
  });

  test("a workspace's quota refuses every caller of it once used, naming the workspace", async () => {
    for (let i = 0; i < 8; i++) expect((await call(t, '/agents', { token: t.token({ user: `u${i}`, workspace: 'ws-full' }) })).status).toBe(200);
    const refused = await call(t, '/agents', { token: t.token({ user: 'u-new', workspace: 'ws-full' }) });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatch(/^rate limit 'workspace': the workspace's quota of 8 requests per 3600 s/);
    expect(fields(refused.headers.get('ratelimit')).workspace!.r).toBe(0);
  });

  test('a refused write is not carried out', async () => {
    const token = t.token({ user: 'writer', workspace: 'ws-writes' });
    for (let i = 0; i < 5; i++) expect((await call(t, '/agents', { method: 'PUT', token, body: JSON.stringify(minimalAgent(`Agent ${i}`)) })).status).toBe(201);
    const refused = await call(t, '/agents', { method: 'PUT', token, body: JSON.stringify(minimalAgent('One too many')) });
    expect(refused.status).toBe(429);
    const list = await call(t, '/agents', { token: t.token({ user: 'reader', workspace: 'ws-writes' }) });
    expect(list.body.data.map((a: { name: string }) => a.name).sort()).toEqual(['Agent 0', 'Agent 1', 'Agent 2', 'Agent 3', 'Agent 4']);
  });

  test('run starts and validations have lower quotas of their own, advertised beside the request quotas', async () => {
    const owner = t.token({ user: 'owner', workspace: 'ws-runs' });
    const created = await call(t, '/agents', { method: 'PUT', token: owner, body: JSON.stringify(minimalAgent('Runner')) });
    const slug = created.body.data.document.slug as string;
    const runner = t.token({ user: 'runner', workspace: 'ws-runs' });
    const first = await call(t, `/agents/${slug}/test`, { method: 'POST', token: runner, body: JSON.stringify({ prompt: 'hello' }) });
    expect(first.status).toBe(202);
    expect(Object.keys(fields(first.headers.get('ratelimit-policy')))).toEqual(['workspace', 'caller', 'workspace-runs', 'caller-runs']);
    expect(fields(first.headers.get('ratelimit'))['caller-runs']!.r).toBe(1);
    expect((await call(t, `/agents/${slug}/test`, { method: 'POST', token: runner, body: JSON.stringify({ prompt: 'hello' }) })).status).toBe(202);
    const refused = await call(t, `/agents/${slug}/test`, { method: 'POST', token: runner, body: JSON.stringify({ prompt: 'hello' }) });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatch(/^rate limit 'caller-runs': this caller's quota of 2 run starts per 3600 s is used up/);
    // Reads go on, and the refused start queued nothing: two runs in the list.
    const runs = await call(t, `/runs?agent=${slug}`, { token: runner });
    expect(runs.status).toBe(200);
    expect(runs.body.data).toHaveLength(2);

    const validator = t.token({ user: 'validator', workspace: 'ws-runs' });
    const valid = await call(t, '/agents/validate', { method: 'POST', token: validator, body: JSON.stringify(minimalAgent('Checked')) });
    expect(valid.status).toBe(200);
    expect(Object.keys(fields(valid.headers.get('ratelimit')))).toEqual(['workspace', 'caller', 'workspace-validations', 'caller-validations']);
    const again = await call(t, '/agents/validate', { method: 'POST', token: validator, body: JSON.stringify(minimalAgent('Checked')) });
    expect(again.status).toBe(429);
    expect(again.body.error).toMatch(/'caller-validations'/);
  });

  test('errors after the quota check carry the fields too; 401 and 403 (no quota counted) do not', async () => {
    const token = t.token({ user: 'errors', workspace: 'ws-errors' });
    const bad = await call(t, '/agents', { method: 'PUT', token, body: '{"not json' });
    expect(bad.status).toBe(400);
    expect(fields(bad.headers.get('ratelimit')).caller!.r).toBe(4);
    const unauthenticated = await fetch(`${t.baseUrl}/api/build/agents`);
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('ratelimit')).toBeNull();
    const forbidden = await call(t, '/agents', { token: t.token({ user: 'errors', workspace: 'ws-errors', scope: 'read' }) });
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get('ratelimit')).toBeNull();
  });

  test('an MCP request counts as a request, a tool call as its own: beyond the quota a 429 tool error with Retry-After', async () => {
    const token = t.token({ user: 'assistant', workspace: 'ws-mcp' });
    // Every HTTP request the client makes is counted here: connecting and listing cost as much as calls.
    let requests = 0;
    const counting: typeof fetch = (input, init) => {
      requests++;
      return fetch(input, init);
    };
    const client = new Client({ name: 'rate-limit-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { fetch: counting, requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
    );
    try {
      const before = requests;
      expect(before).toBeLessThan(5);
      const results = [];
      for (let i = 0; i < 6 - before; i++) results.push(await client.callTool({ name: 'list_agents', arguments: {} }));
      expect(results.slice(0, 5 - before).every((r) => !r.isError)).toBe(true);
      const refused = results[5 - before]!;
      expect(refused.isError).toBe(true);
      const text = (refused.content as { text: string }[]).map((c) => c.text).join('\n');
      expect(text).toMatch(/^429: \{"error":"rate limit 'caller'/);
      expect(text).toMatch(/Retry-After: \d+/);
      expect((await call(t, '/agents', { token })).status).toBe(429);
    } finally {
      await client.close();
    }
  });

  test('MCP discovery (initialize, tools/list) counts against the quota like any request: 429 with Retry-After beyond it', async () => {
    const token = t.token({ user: 'lister', workspace: 'ws-discovery' });
    const rpc = (id: number, method: string, params: Record<string, unknown> = {}) =>
      fetch(`${t.baseUrl}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      });
    const initialized = await rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
    expect(initialized.status).toBe(200);
    expect(fields(initialized.headers.get('ratelimit')).caller).toMatchObject({ r: 4 });
    await initialized.text();
    const answers = [];
    for (let i = 2; i <= 6; i++) {
      const res = await rpc(i, 'tools/list');
      answers.push({
        status: res.status,
        remaining: res.status === 200 ? fields(res.headers.get('ratelimit')).caller!.r : null,
        retryAfter: res.headers.get('retry-after'),
      });
      await res.text();
    }
    expect(answers.slice(0, 4).map((a) => [a.status, a.remaining])).toEqual([
      [200, 3],
      [200, 2],
      [200, 1],
      [200, 0],
    ]);
    expect(answers[4]!.status).toBe(429);
    expect(Number(answers[4]!.retryAfter)).toBeGreaterThan(0);
    expect((await call(t, '/agents', { token })).status).toBe(429);
  });
});

describe('concurrency and windows', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ RATE_LIMIT_WINDOW_SECONDS: '2', RATE_LIMIT_CALLER: '20', RATE_LIMIT_WORKSPACE: '1000' });
  });
  afterAll(() => t.close());

  test('200 requests at once: no more than the quota admitted in one window; the next window admits again', async () => {
    // Start just after a window begins, so the burst lands in one window.
    const windowMs = 2000;
    await new Promise((resolve) => setTimeout(resolve, windowMs - (Date.now() % windowMs) + 50));
    const token = t.token({ user: 'burst', workspace: 'ws-burst' });
    const statuses = (await Promise.all(Array.from({ length: 200 }, () => call(t, '/agents', { token })))).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(180);
    await new Promise((resolve) => setTimeout(resolve, windowMs - (Date.now() % windowMs) + 50));
    const next = await call(t, '/agents', { token });
    expect(next.status).toBe(200);
    expect(fields(next.headers.get('ratelimit')).caller!.r).toBe(19);
  });
});

test('quotas of 0 are off: no fields, no refusals', async () => {
  const t = await startService({
    RATE_LIMIT_WORKSPACE: '0',
    RATE_LIMIT_CALLER: '0',
    RATE_LIMIT_WORKSPACE_RUNS: '0',
    RATE_LIMIT_CALLER_RUNS: '0',
    RATE_LIMIT_WORKSPACE_VALIDATIONS: '0',
    RATE_LIMIT_CALLER_VALIDATIONS: '0',
  });
  try {
    const res = await call(t, '/agents');
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-policy')).toBeNull();
    expect(res.headers.get('ratelimit')).toBeNull();
  } finally {
    await t.close();
  }
});

test('a quota that is not a number stops start-up, naming the variable', async () => {
  await expect(startService({ RATE_LIMIT_CALLER: 'lots' })).rejects.toThrow(/RATE_LIMIT_CALLER/);
});
