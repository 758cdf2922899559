// The MCP server at /mcp over real HTTP, with the official client SDKs: v2 (@modelcontextprotocol/
// client, on the 2025 revisions and on 2026-07-28) and v1 (@modelcontextprotocol/sdk). Tools match
// openapi.yaml's operations; a call gives what the same REST call gives; refusals are tool errors
// that carry the REST status and body; authorization is the REST API's, challenged with the MCP
// resource's metadata.
import fs from 'node:fs';
import yaml from 'js-yaml';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { NOT_TOOLS, toolName } from '../../src/mcp/tools';
import { specPath } from '../../src/paths';
import { minimalAgent } from '../helpers/fixtures';
import { rawConnection } from '../helpers/raw-connection';
import { startService, type TestService } from '../helpers/service';

interface ToolResult {
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** What the clients have in common here. */
interface McpClient {
  listTools(): Promise<{ tools: { name: string; annotations?: Record<string, unknown>; inputSchema: object; outputSchema?: object }[] }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

let t: TestService;
const clients: McpClient[] = [];
beforeAll(async () => {
  t = await startService();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await t.close();
});

const CLIENTS = {
  'v2 client, 2025-11-25': async (token: string) => {
    const client = new Client({ name: 'test-v2', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return client as unknown as McpClient;
  },
  'v2 client, 2026-07-28': async (token: string) => {
    const client = new Client({ name: 'test-v2-modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    return client as unknown as McpClient;
  },
  'v1 client (@modelcontextprotocol/sdk)': async (token: string) => {
    const client = new V1Client({ name: 'test-v1', version: '1.0.0' });
    await client.connect(new V1Transport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return client as unknown as McpClient;
  },
};

async function connect(kind: keyof typeof CLIENTS, token = t.token()): Promise<McpClient> {
  const client = await CLIENTS[kind](token);
  clients.push(client);
  return client;
}

const call = async (client: McpClient, name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as ToolResult;
const errorOf = (result: ToolResult) => {
  expect(result.isError).toBe(true);
  const text = result.content[0]!.text;
  return { status: Number(text.slice(0, text.indexOf(':'))), body: JSON.parse(text.slice(text.indexOf(':') + 1)) as Record<string, unknown> };
};

/** The spec's operations, read here on their own (not through src/mcp/tools.ts). */
function specOperations(): string[] {
  const spec = yaml.load(fs.readFileSync(specPath, 'utf8')) as { paths: Record<string, Record<string, { operationId?: string }>> };
  return Object.values(spec.paths).flatMap((item) =>
    Object.values(item).flatMap((op) => (op && typeof op === 'object' && op.operationId ? [op.operationId] : [])),
  );
}

test('the tool list is every operation of openapi.yaml but those listed as not tools, named in snake_case, with schemas and annotations', async () => {
  const client = await connect('v2 client, 2025-11-25');
  const { tools } = await client.listTools();
  const operations = specOperations();
  expect(Object.keys(NOT_TOOLS).filter((id) => !operations.includes(id))).toEqual([]);
  expect(tools.map((tool) => tool.name).sort()).toEqual(
    operations
      .filter((id) => !(id in NOT_TOOLS))
      .map(toolName)
      .sort(),
  );
  expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['create_agent', 'validate_workflow', 'get_agent_run', 'list_agent_versions']));
  const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
  expect(byName.get_agent!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
  expect(byName.validate_agent!.annotations).toMatchObject({ readOnlyHint: true });
  expect(byName.delete_workflow!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true });
  expect(byName.test_agent!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false });
  expect(byName.create_agent!.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: false });
  expect(byName.replace_agent!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: true });
  expect(byName.replace_agent!.inputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['ref', 'if_match', 'body']) });
  expect(byName.get_agent_run!.inputSchema).toMatchObject({ properties: { runId: expect.anything(), wait_seconds: { maximum: 60 } } });
  expect(byName.get_agent!.outputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['id', 'slug', 'updated_at']) });
  expect(byName.list_agents!.outputSchema).toMatchObject({ type: 'object', properties: { data: { type: 'array' } } });
  // Its reply's data is null, and structured content is an object: the whole body.
  expect(byName.delete_workflow!.outputSchema).toMatchObject({ type: 'object', required: ['data'] });
});

describe.each(Object.keys(CLIENTS) as (keyof typeof CLIENTS)[])('%s', (kind) => {
  test('builds, validates, replaces (a stale if_match is the 409 as a tool error) and tests an agent, waiting for its run', async () => {
    const client = await connect(kind);
    const invalid = errorOf(await call(client, 'validate_agent', { body: { ...minimalAgent(), max_steps: 0 } }));
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toContain('max_steps');
    const valid = await call(client, 'validate_agent', { body: minimalAgent(`MCP ${kind}`) });
    expect(valid.isError).toBeFalsy();
    expect(valid.structuredContent).toMatchObject({ valid: true });

    const created = await call(client, 'create_agent', { body: minimalAgent(`MCP ${kind}`) });
    expect(created.isError).toBeFalsy();
    const document = (created.structuredContent as { document: { id: string; slug: string; updated_at: string } }).document;
    // What the same REST read gives.
    const rest = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: document.slug } } });
    const read = await call(client, 'get_agent', { ref: document.slug });
    expect(read.structuredContent).toEqual(rest.data!.data);
    expect(read.content.map((c) => c.text)).toContain(`ETag: ${rest.response.headers.get('etag')}`);
    expect(JSON.parse(read.content[0]!.text)).toEqual(rest.data!.data);

    const body = { ...rest.data!.data, instructions: 'Answer briefly.' };
    const stale = errorOf(await call(client, 'replace_agent', { ref: document.id, if_match: '"2020-01-01T00:00:00.000000Z"', body }));
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ error: expect.any(String), current: { id: document.id, updated_at: document.updated_at } });
    // A bare stamp is quoted for the caller.
    const replaced = await call(client, 'replace_agent', { ref: document.id, if_match: document.updated_at, body });
    expect(replaced.isError).toBeFalsy();
    expect(replaced.structuredContent).toMatchObject({ version: 2, document: { instructions: 'Answer briefly.' } });

    const started = await call(client, 'test_agent', { ref: document.slug, body: { prompt: 'hello' } });
    expect(started.isError).toBeFalsy();
    const runId = (started.structuredContent as { run_id: string }).run_id;
    const run = await call(client, 'get_agent_run', { runId, wait_seconds: 10 });
    expect(run.isError).toBeFalsy();
    expect(['succeeded', 'failed']).toContain((run.structuredContent as { status: string }).status);
    expect(run.content[0]!.text).toMatch(/^Warning: .*third parties/);
    const restRun = await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId } } });
    expect(run.structuredContent).toEqual(restRun.data!.data);

    // Another workspace's token sees none of it.
    const stranger = await connect(kind, t.token({ workspace: `ws-other-${kind.length}` }));
    expect(errorOf(await call(stranger, 'get_agent', { ref: document.id })).status).toBe(404);
    expect(errorOf(await call(stranger, 'get_agent_run', { runId })).status).toBe(404);
  });
});

test('arguments are the REST request: unknown ones are refused, query values reach the operation, a missing body is the 400 REST gives', async () => {
  const client = await connect('v2 client, 2025-11-25');
  const unknown = errorOf(await call(client, 'list_agents', { colour: 'red' }));
  expect(unknown.status).toBe(400);
  expect(unknown.body.error).toContain('colour');
  expect(errorOf(await call(client, 'create_agent', {})).status).toBe(400);
  // Only a tool whose operation takes a body takes `body`.
  expect(errorOf(await call(client, 'get_agent', { ref: 'x', body: {} }))).toEqual({
    status: 400,
    body: { error: 'body: unknown argument; get_agent takes ref' },
  });
  expect(errorOf(await call(client, 'get_catalog', { x: 1 })).body.error).toBe('x: unknown argument; get_catalog takes no arguments');
  // Types as the tool's inputSchema says: no coercion.
  expect(errorOf(await call(client, 'get_agent', { ref: 123 }))).toEqual({ status: 400, body: { error: expect.stringMatching(/^ref: .*string/) } });
  expect(errorOf(await call(client, 'list_agent_runs', { limit: '5' })).body.error).toMatch(/^limit: /);
  expect(errorOf(await call(client, 'replace_agent', { ref: 'x', if_match: '', body: {} })).body.error).toMatch(/^if_match: /);
  expect(errorOf(await call(client, 'get_agent_run', { runId: '5b0c3a4e-8f1d-4c2a-9e77-0d6f1b2a3c4d', wait_seconds: null })).status).toBe(400);
  expect(errorOf(await call(client, 'get_agent_run', { runId: 'not-a-uuid' })).status).toBe(400);
  expect(errorOf(await call(client, 'get_agent_run', { runId: '5b0c3a4e-8f1d-4c2a-9e77-0d6f1b2a3c4d', wait_seconds: 61 })).status).toBe(400);
  await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/no_such_tool/);
});

test('authorization: no token or a bad one is 401 naming the MCP metadata, which is served; no Build scope is 403; a token in the query is refused', async () => {
  const post = (headers: Record<string, string>, query = '') =>
    fetch(`${t.baseUrl}/mcp${query}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
  const metadataUrl = 'http://build.test/.well-known/oauth-protected-resource/mcp';
  const none = await post({});
  expect(none.status).toBe(401);
  expect(none.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}", scope="build"`);
  expect(await none.json()).toEqual({ error: expect.stringContaining('bearer token') });
  const bad = await post({ Authorization: 'Bearer not.a.token' });
  expect(bad.status).toBe(401);
  expect(bad.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}", error="invalid_token", scope="build"`);
  const noScope = await post({ Authorization: `Bearer ${t.token({ scope: 'read' })}` });
  expect(noScope.status).toBe(403);
  expect(noScope.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}", error="insufficient_scope", scope="build"`);
  expect((await post({}, `?access_token=${t.token()}`)).status).toBe(401);

  const metadata = await fetch(`${t.baseUrl}/.well-known/oauth-protected-resource/mcp`);
  expect(metadata.status).toBe(200);
  expect(await metadata.json()).toMatchObject({
    resource: 'http://build.test/mcp',
    authorization_servers: [expect.any(String)],
    scopes_supported: ['build'],
    bearer_methods_supported: ['header'],
  });

  await expect(CLIENTS['v1 client (@modelcontextprotocol/sdk)']('not.a.token')).rejects.toMatchObject({ code: 401 });
  const ok = await post({ Authorization: `Bearer ${t.token()}` });
  expect(ok.status).toBe(200);
  // Stateless: no session to resume.
  expect(ok.headers.get('mcp-session-id')).toBeNull();
});

test('reads give what the same REST reads give: lists (with their cursor), the catalog, connections, versions', async () => {
  const client = await connect('v1 client (@modelcontextprotocol/sdk)');
  const created = await call(client, 'create_agent', { body: minimalAgent('Compared') });
  const slug = (created.structuredContent as { document: { slug: string } }).document.slug;
  const rest = t.client();
  const pairs: [string, Record<string, unknown>, () => Promise<{ data?: unknown }>, boolean][] = [
    ['list_agents', {}, () => rest.GET('/api/build/agents'), false],
    ['get_catalog', {}, () => rest.GET('/api/build/catalog'), true],
    ['get_catalog_app', { app: 'kv' }, () => rest.GET('/api/build/catalog/apps/{app}', { params: { path: { app: 'kv' } } }), true],
    ['list_connections', {}, () => rest.GET('/api/build/connections'), false],
    [
      'list_agent_versions',
      { ref: slug, limit: 1 },
      () => rest.GET('/api/build/agents/{ref}/versions', { params: { path: { ref: slug }, query: { limit: 1 } } }),
      false,
    ],
    ['list_agent_runs', { limit: 5 }, () => rest.GET('/api/build/runs', { params: { query: { limit: 5 } } }), false],
  ];
  for (const [name, args, viaRest, isData] of pairs) {
    const result = await call(client, name, args);
    const body = (await viaRest()).data as { data: unknown };
    expect([name, result.structuredContent]).toEqual([name, isData ? body.data : body]);
  }
});

test('a 2025-06-18 client is served; an idempotency_key replays the first reply as Idempotency-Key does', async () => {
  const init = await fetch(`${t.baseUrl}/mcp`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${t.token()}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'old', version: '1' } },
    }),
  });
  expect(init.status).toBe(200);
  expect(await init.text()).toContain('"protocolVersion":"2025-06-18"');

  const client = await connect('v2 client, 2026-07-28');
  const created = await call(client, 'create_agent', { body: minimalAgent('Idempotent'), idempotency_key: 'mcp-key-1' });
  const again = await call(client, 'create_agent', { body: minimalAgent('Idempotent'), idempotency_key: 'mcp-key-1' });
  const id = (r: ToolResult) => (r.structuredContent as { document: { id: string } }).document.id;
  expect(id(again)).toBe(id(created));
  expect(again.content).toEqual(created.content); // the kept reply: body and headers
  const otherBody = errorOf(await call(client, 'create_agent', { body: minimalAgent('Different'), idempotency_key: 'mcp-key-1' }));
  expect(otherBody.status).toBe(422);
});

describe('wait_seconds', () => {
  let n = 0;
  async function runOf(client: McpClient, prompt: string, approval: 'write' | 'destructive' = 'destructive') {
    const agent = {
      ...minimalAgent(`Waited ${++n}`),
      max_steps: 20,
      tools: { apps: ['kv', 'core'], connections: 'all' as const, disabled_tools: [], approval },
    };
    const created = await call(client, 'create_agent', { body: agent });
    const slug = (created.structuredContent as { document: { slug: string } }).document.slug;
    return (await call(client, 'test_agent', { ref: slug, body: { prompt } })).structuredContent as { run_id: string };
  }
  const sleeps = (count: number, ms: number) => Array.from({ length: count }, () => `/call core.sleep {"ms":${ms}}`).join('\n');
  const timed = async <T>(f: () => Promise<T>) => {
    const started = performance.now();
    const value = await f();
    return { value, ms: performance.now() - started };
  };

  test('answers when the run ends, not before; or when the time passes, with the run still going', async () => {
    const client = await connect('v2 client, 2026-07-28');
    const { run_id: runId } = await runOf(client, sleeps(4, 250));
    const ended = await timed(() => call(client, 'get_agent_run', { runId, wait_seconds: 20 }));
    expect(ended.value.structuredContent).toMatchObject({ status: 'succeeded' });
    expect(ended.ms).toBeLessThan(10_000);

    const { run_id: longRun } = await runOf(client, sleeps(8, 500));
    const waited = await timed(() => call(client, 'get_agent_run', { runId: longRun, wait_seconds: 1 }));
    expect(waited.ms).toBeGreaterThanOrEqual(950);
    expect(['queued', 'running']).toContain((waited.value.structuredContent as { status: string }).status);
    // A run that has ended is answered at once.
    await call(client, 'cancel_agent_run', { runId: longRun });
    const after = await timed(() => call(client, 'get_agent_run', { runId: longRun, wait_seconds: 30 }));
    expect(after.value.structuredContent).toMatchObject({ status: 'cancelled' });
    expect(after.ms).toBeLessThan(2000);
  });

  test('a run that stops to wait for an approval has left running: the wait answers then', async () => {
    const client = await connect('v1 client (@modelcontextprotocol/sdk)');
    const { run_id: runId } = await runOf(client, '/call kv.set {"key":"k","value":1}', 'write');
    const parked = await timed(() => call(client, 'get_agent_run', { runId, wait_seconds: 20 }));
    expect(parked.value.structuredContent).toMatchObject({ status: 'awaiting_approval' });
    expect(parked.ms).toBeLessThan(10_000);
    const decided = await call(client, 'decide_tool_call', { runId, callId: 'call_1', body: { decision: 'reject' } });
    expect(decided.isError).toBeFalsy();
  });

  test("a wait holds one of the caller's stream slots: beyond EVENT_STREAMS_PER_CALLER it is 429, and a caller that goes away frees its slot", async () => {
    const token = t.token({ user: 'waiter' });
    const client = await connect('v2 client, 2025-11-25', token);
    const { run_id: runId } = await runOf(client, sleeps(20, 500));
    // Waits sent as plain requests, so that giving one up closes its connection (the SDK clients'
    // cancellation leaves the request open; a stateless server learns of it only when it closes).
    const wait = (signal: AbortSignal) =>
      fetch(`${t.baseUrl}/mcp`, {
        signal,
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_agent_run', arguments: { runId, wait_seconds: 30 } } }),
      }).then(
        (res) => res.text(),
        () => 'given up',
      );
    const aborts = Array.from({ length: t.config.eventStreamsPerCaller }, () => new AbortController());
    const waits = aborts.map((abort) => wait(abort.signal));
    const refusedIn = async () => {
      for (let i = 0; i < 50; i++) {
        const result = await call(client, 'get_agent_run', { runId, wait_seconds: 1 });
        if (result.isError) return errorOf(result);
        await new Promise((r) => setTimeout(r, 100));
      }
      return null;
    };
    const refused = await refusedIn();
    expect(refused?.status).toBe(429);
    expect(refused?.body.error).toContain('EVENT_STREAMS_PER_CALLER');
    // Without waiting, the read is answered.
    expect((await call(client, 'get_agent_run', { runId })).isError).toBeFalsy();
    for (const abort of aborts) abort.abort();
    expect(await Promise.all(waits)).toEqual(aborts.map(() => 'given up'));
    // The slots come back as the server sees the connections close.
    let admitted = false;
    for (let i = 0; i < 50 && !admitted; i++) {
      await new Promise((r) => setTimeout(r, 100));
      admitted = !(await call(client, 'get_agent_run', { runId, wait_seconds: 1 })).isError;
    }
    expect(admitted).toBe(true);
    await call(client, 'cancel_agent_run', { runId });
  });
});

describe('hostile requests', () => {
  const post = (body: string | Buffer) =>
    fetch(`${t.baseUrl}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${t.token()}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body,
    });

  test('an MCP request over 128 KiB is 413 before its body is read; malformed JSON-RPC is a parse error; the service keeps answering', async () => {
    const lagged = eventLoopLag();
    // The head alone, announcing 8 MiB: the answer comes before a byte of the body is sent. (A
    // fetch of a real 8 MiB body held this process's loop, client and service both, past the bound.)
    const connection = rawConnection(t.baseUrl);
    try {
      await connection.write(
        `POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.token()}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${8 * 1024 * 1024}\r\n\r\n`,
      );
      expect(await connection.response()).toMatchObject({ status: 413 });
    } finally {
      connection.destroy();
    }
    const malformed = await post('{"jsonrpc":"2.0","id":1,"method":');
    expect(malformed.status).toBe(400);
    expect(await malformed.text()).toContain('Parse error');
    // JSON that parsing would change is refused as the REST API refuses it, naming where.
    const twice = await post('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"validate_agent","arguments":{"body":{"name":"a","name":"b"}}}}');
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { error: { code: number; message: string } }).error).toEqual({
      code: -32700,
      message: 'Parse error: request.params.arguments.body.name: is a duplicate member name (each member may appear once in an object, as RFC 7493 requires)',
    });
    expect(lagged()).toBeLessThan(500);
    const client = await connect('v2 client, 2025-11-25');
    expect((await client.listTools()).tools.length).toBeGreaterThan(30);
  });

  test("a tool's body is held to the REST body limits: size, depth and U+0000", async () => {
    const client = await connect('v2 client, 2025-11-25');
    const deep = JSON.parse(`${'{"a":'.repeat(100)}1${'}'.repeat(100)}`) as object;
    const nested = errorOf(await call(client, 'validate_agent', { body: deep }));
    expect(nested).toEqual({ status: 400, body: { error: 'body: nested deeper than 64 levels' } });
    const large = errorOf(await call(client, 'validate_agent', { body: { ...minimalAgent(), instructions: 'x'.repeat(70_000) } }));
    expect(large.status).toBe(413);
    const nul = errorOf(await call(client, 'validate_agent', { body: { ...minimalAgent(), name: 'a\u0000b' } }));
    expect(nul).toEqual({ status: 400, body: { error: 'body.name: must not contain the character U+0000 (NUL)' } });
  });
});

/** The longest the event loop was held up between now and the call of the returned function, in ms. */
function eventLoopLag(): () => number {
  let worst = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 10);
    last = now;
  }, 10);
  return () => {
    clearInterval(timer);
    return worst;
  };
}
