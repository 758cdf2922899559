// HTTP as integrators expect it, over real sockets on the store under test: HEAD on every GET
// resource, conditional reads (If-None-Match → 304), Cache-Control, compression by Accept-Encoding,
// 406 and 415 by media type, Location on every 202 that starts a run, OPTIONS, and CORS by the
// operator's allow-list (off by default). Replies are read raw (node's http, not fetch, which would
// decompress and hide what was sent).
import http from 'node:http';
import zlib from 'node:zlib';
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun } from '../helpers/runs';

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function raw(t: TestService, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${t.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${t.token()}`, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode as number, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const json = (r: Raw) => JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;
/** The fields a HEAD must repeat from its GET (the ones that do not change from one reply to the next). */
const stableFields = (h: http.IncomingHttpHeaders) => ({ type: h['content-type'], length: h['content-length'], etag: h.etag, cache: h['cache-control'] });

let t: TestService;
let agentId: string;
let runId: string;
beforeAll(async () => {
  t = await startService();
  const created = await raw(
    t,
    'PUT',
    '/api/build/agents',
    { 'content-type': 'application/json' },
    JSON.stringify({ ...minimalAgent('Conformance'), slug: 'conformance', instructions: 'Answer politely. '.repeat(200) }),
  );
  expect(created.status).toBe(201);
  agentId = (json(created).data as { document: { id: string } }).document.id;
  const started = await raw(t, 'POST', '/api/build/agents/conformance/test', { 'content-type': 'application/json' }, '{"prompt":"hello"}');
  expect(started.status).toBe(202);
  runId = (json(started).data as { run_id: string }).run_id;
  await waitForAgentRun(t, runId);
});
afterAll(() => t.close());

describe('HEAD', () => {
  test.each([
    '/api/build/agents',
    '/api/build/agents/conformance',
    '/api/build/agents/conformance/versions/1',
    '/api/build/catalog',
    '/api/build/runs',
    '/api/build/connections',
  ])('HEAD %s: the fields of its GET, no body', async (path) => {
    const get = await raw(t, 'GET', path);
    const head = await raw(t, 'HEAD', path);
    expect(get.status).toBe(200);
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(stableFields(head.headers)).toEqual(stableFields(get.headers));
    expect(head.headers.ratelimit).toBeDefined();
  });

  test('HEAD of a run and of its event stream; HEAD without a token is 401; Allow names HEAD', async () => {
    const run = await raw(t, 'HEAD', `/api/build/runs/${runId}`);
    expect([run.status, run.body.length, run.headers.etag]).toEqual([200, 0, (await raw(t, 'GET', `/api/build/runs/${runId}`)).headers.etag]);
    const stream = await raw(t, 'HEAD', `/api/build/runs/${runId}/events`, { accept: 'text/event-stream' });
    expect([stream.status, stream.headers['content-type'], stream.body.length]).toEqual([200, 'text/event-stream', 0]);
    const anonymous = await new Promise<number>((resolve) =>
      http.request(`${t.baseUrl}/api/build/agents`, { method: 'HEAD' }, (res) => resolve(res.statusCode as number)).end(),
    );
    expect(anonymous).toBe(401);
    const refused = await raw(t, 'PATCH', '/api/build/agents/conformance');
    expect(refused.status).toBe(405);
    expect(refused.headers.allow).toBe('GET, HEAD, PUT, OPTIONS');
  });
});

describe('conditional reads and Cache-Control', () => {
  test('a document: 304 for its ETag (strong, weak, in a list, or *), 200 once it changes', async () => {
    const read = await raw(t, 'GET', '/api/build/agents/conformance');
    const etag = read.headers.etag as string;
    expect(read.headers['cache-control']).toBe('private, no-cache');
    for (const condition of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const again = await raw(t, 'GET', '/api/build/agents/conformance', { 'if-none-match': condition });
      expect([again.status, again.body.length, again.headers.etag, again.headers['cache-control']]).toEqual([304, 0, etag, 'private, no-cache']);
    }
    expect((await raw(t, 'GET', '/api/build/agents/conformance', { 'if-none-match': '"2020-01-01T00:00:00.000000Z"' })).status).toBe(200);
    const document = json(read).data as Record<string, unknown>;
    const replaced = await raw(
      t,
      'PUT',
      '/api/build/agents/conformance',
      { 'content-type': 'application/json', 'if-match': etag },
      JSON.stringify({ ...document, name: 'Conformance 2' }),
    );
    expect([replaced.status, replaced.headers['cache-control']]).toEqual([200, 'no-store']);
    const changed = await raw(t, 'GET', '/api/build/agents/conformance', { 'if-none-match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
  });

  test('a version named by document id is immutable; by slug it is revalidated; both answer 304', async () => {
    const byId = await raw(t, 'GET', `/api/build/agents/${agentId}/versions/1`);
    expect(byId.headers['cache-control']).toBe('private, max-age=31536000, immutable');
    const bySlug = await raw(t, 'GET', '/api/build/agents/conformance/versions/1');
    expect(bySlug.headers['cache-control']).toBe('private, no-cache');
    expect((await raw(t, 'GET', `/api/build/agents/${agentId}/versions/1`, { 'if-none-match': byId.headers.etag as string })).status).toBe(304);
    expect((await raw(t, 'HEAD', '/api/build/agents/conformance/versions/1', { 'if-none-match': bySlug.headers.etag as string })).status).toBe(304);
  });

  test("a run's ETag is a digest of its projection: 304 while it is the same", async () => {
    const read = await raw(t, 'GET', `/api/build/runs/${runId}`);
    expect(read.headers.etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect((await raw(t, 'GET', `/api/build/runs/${runId}`, { 'if-none-match': read.headers.etag as string })).status).toBe(304);
    expect((await raw(t, 'GET', `/api/build/runs/${runId}`, { 'if-none-match': '"not-it"' })).status).toBe(200);
  });

  test('errors are no-store', async () => {
    const missing = await raw(t, 'GET', '/api/build/agents/no-such-agent');
    expect([missing.status, missing.headers['cache-control']]).toEqual([404, 'no-store']);
  });
});

describe('compression', () => {
  test('a reply of 1 KiB or more is compressed as Accept-Encoding allows; a small reply is not', async () => {
    const plain = await raw(t, 'GET', '/api/build/agents/conformance');
    expect(plain.body.length).toBeGreaterThan(1024);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const gzipped = await raw(t, 'GET', '/api/build/agents/conformance', { 'accept-encoding': 'gzip' });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.vary).toMatch(/Accept-Encoding/i);
    expect(zlib.gunzipSync(gzipped.body).equals(plain.body)).toBe(true);
    const brotli = await raw(t, 'GET', '/api/build/agents/conformance', { 'accept-encoding': 'br' });
    expect(brotli.headers['content-encoding']).toBe('br');
    expect(zlib.brotliDecompressSync(brotli.body).equals(plain.body)).toBe(true);
    const small = await raw(t, 'GET', '/api/build/agents/no-such-agent', { 'accept-encoding': 'gzip' });
    expect(small.headers['content-encoding']).toBeUndefined();
  });

  test('/docs and MCP tools/list are compressed; an event stream is not', async () => {
    const docs = await raw(t, 'GET', '/docs', { 'accept-encoding': 'gzip' });
    expect([docs.status, docs.headers['content-encoding']]).toEqual([200, 'gzip']);
    expect(zlib.gunzipSync(docs.body).toString('utf8')).toContain('<html');
    const list = await raw(
      t,
      'POST',
      '/mcp',
      { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'accept-encoding': 'gzip', 'mcp-protocol-version': '2025-11-25' },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    );
    expect(list.status).toBe(200);
    if (String(list.headers['content-type']).startsWith('application/json')) {
      expect(list.headers['content-encoding']).toBe('gzip');
      expect(JSON.parse(zlib.gunzipSync(list.body).toString('utf8')).result.tools.length).toBeGreaterThan(30);
    } else expect(list.headers['content-encoding']).toBeUndefined();
    const stream = await raw(t, 'GET', `/api/build/runs/${runId}/events`, { accept: 'text/event-stream', 'accept-encoding': 'gzip' });
    expect([stream.status, stream.headers['content-encoding']]).toEqual([200, undefined]);
    expect(stream.body.toString('utf8')).toContain('event: run.finished');
  });
});

describe('media types and Location', () => {
  test('an Accept the operation cannot answer is 406; one it can is served', async () => {
    const xml = await raw(t, 'GET', '/api/build/agents', { accept: 'application/xml' });
    expect([xml.status, json(xml)]).toEqual([406, { error: "Accept: this operation answers with application/json, which 'application/xml' does not accept" }]);
    expect((await raw(t, 'GET', '/api/build/agents', { accept: 'text/html, application/json;q=0.5' })).status).toBe(200);
    expect((await raw(t, 'GET', `/api/build/runs/${runId}/events`, { accept: 'text/event-stream' })).status).toBe(200);
    expect((await raw(t, 'GET', '/api/build/agents', { accept: 'text/event-stream' })).status).toBe(406);
    // Before the token: the request alone decides it.
    const anonymous = await new Promise<number>((resolve) =>
      http.get(`${t.baseUrl}/api/build/agents`, { headers: { accept: 'image/png' } }, (res) => resolve(res.statusCode as number)),
    );
    expect(anonymous).toBe(406);
  });

  test('a body that is not application/json is 415, merge-patch included; nothing is written', async () => {
    const read = await raw(t, 'GET', '/api/build/agents/conformance');
    const merge = await raw(
      t,
      'PUT',
      '/api/build/agents/conformance',
      { 'content-type': 'application/merge-patch+json', 'if-match': read.headers.etag as string },
      '{"name":"Patched"}',
    );
    expect([merge.status, json(merge).error]).toEqual([415, "Content-Type: must be application/json (UTF-8), got 'application/merge-patch+json'"]);
    expect((await raw(t, 'GET', '/api/build/agents/conformance')).headers.etag).toBe(read.headers.etag);
  });

  test('every 202 that starts a run names it in Location', async () => {
    const agent = await raw(t, 'POST', '/api/build/agents/conformance/test', { 'content-type': 'application/json' }, '{"prompt":"again"}');
    expect(agent.headers.location).toBe(`/api/build/runs/${(json(agent).data as { run_id: string }).run_id}`);
    expect((await raw(t, 'GET', agent.headers.location as string)).status).toBe(200);
    const workflow = await raw(
      t,
      'PUT',
      '/api/build/workflows',
      { 'content-type': 'application/json' },
      JSON.stringify({ kind: 'service.workflow/v1', slug: 'located', name: 'L', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo', args: {} }] }),
    );
    expect(workflow.status).toBe(201);
    const started = await raw(t, 'POST', '/api/build/workflows/located/test', { 'content-type': 'application/json' }, '{}');
    expect(started.headers.location).toBe(`/api/build/workflow-runs/${(json(started).data as { run_id: string }).run_id}`);
    expect((await raw(t, 'GET', started.headers.location as string)).status).toBe(200);
  });

  test('a webhook delivery names its run in Location', async () => {
    const created = await raw(
      t,
      'PUT',
      '/api/build/agents',
      { 'content-type': 'application/json' },
      JSON.stringify({ ...minimalAgent('Hooked'), slug: 'hooked', triggers: [{ kind: 'webhook', name: 'In' }] }),
    );
    const data = json(created).data as { webhook_urls: { url: string }[]; document: { updated_at: string } };
    await raw(
      t,
      'POST',
      '/api/build/agents/hooked/status',
      { 'content-type': 'application/json', 'if-match': created.headers.etag as string },
      '{"status":"active"}',
    );
    const delivered = await raw(t, 'POST', new URL(data.webhook_urls[0]!.url).pathname, { 'content-type': 'application/json' }, '{"a":1}');
    expect(delivered.status).toBe(202);
    expect(delivered.headers.location).toBe(`/api/build/runs/${(json(delivered).data as { run_id: string }).run_id}`);
  });

  test('OPTIONS: 204 with Allow; no CORS fields while no origin is allowed', async () => {
    const options = await raw(t, 'OPTIONS', '/api/build/agents/conformance', { origin: 'https://app.example.org', 'access-control-request-method': 'PUT' });
    expect([options.status, options.headers.allow, options.headers['access-control-allow-origin']]).toEqual([204, 'GET, HEAD, PUT, OPTIONS', undefined]);
    const get = await raw(t, 'GET', '/api/build/agents/conformance', { origin: 'https://app.example.org' });
    expect(get.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('CORS by allow-list', () => {
  let c: TestService;
  beforeAll(async () => {
    c = await startService({ CORS_ALLOWED_ORIGINS: 'https://app.example.org, http://localhost:5173' });
  });
  afterAll(() => c.close());

  test('a preflight from an allowed origin is answered with the methods and fields it may use', async () => {
    const preflight = await raw(c, 'OPTIONS', '/api/build/agents/x', {
      origin: 'https://app.example.org',
      'access-control-request-method': 'PUT',
      'access-control-request-headers': 'authorization, if-match, content-type',
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example.org');
    expect(preflight.headers['access-control-allow-methods']).toContain('PUT');
    expect(String(preflight.headers['access-control-allow-headers']).toLowerCase()).toContain('if-match');
    expect(preflight.headers['access-control-max-age']).toBe('600');
  });

  test('a request from an allowed origin may read ETag, Location and the RateLimit fields; another origin gets no CORS fields', async () => {
    const created = await raw(
      c,
      'PUT',
      '/api/build/agents',
      { origin: 'http://localhost:5173', 'content-type': 'application/json' },
      JSON.stringify(minimalAgent('Browser')),
    );
    expect(created.status).toBe(201);
    expect(created.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    const exposed = String(created.headers['access-control-expose-headers'])
      .split(',')
      .map((h) => h.trim());
    expect(exposed).toEqual(expect.arrayContaining(['ETag', 'Location', 'RateLimit', 'RateLimit-Policy', 'Retry-After']));
    const other = await raw(c, 'GET', '/api/build/agents', { origin: 'https://evil.example' });
    expect([other.status, other.headers['access-control-allow-origin']]).toEqual([200, undefined]);
    const refused = await raw(c, 'OPTIONS', '/api/build/agents', { origin: 'https://evil.example', 'access-control-request-method': 'GET' });
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
  });
});
