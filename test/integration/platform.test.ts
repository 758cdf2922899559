import fs from 'node:fs';
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { rawConnection } from '../helpers/raw-connection';
import { generatedDocsDir } from '../../src/paths';
import { BODY_LIMIT_BYTES, DISCARD_LIMIT_BYTES } from '../../src/http/body';

let t: TestService;
let auth: Record<string, string>;
beforeAll(async () => {
  t = await startService();
  auth = { authorization: `Bearer ${t.token()}` };
});
afterAll(() => t.close());

async function call(method: string, path: string, init: { headers?: Record<string, string>; body?: string | Buffer } = {}) {
  const res = await fetch(`${t.baseUrl}${path}`, { method, headers: { ...auth, ...init.headers }, body: init.body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

test('liveness and readiness', async () => {
  expect(await call('GET', '/healthz')).toMatchObject({ status: 200, body: { status: 'ok' } });
  expect(await call('GET', '/readyz')).toMatchObject({ status: 200, body: { status: 'ready' } });
});

test('an unknown path is 404 and a wrong method 405 with Allow, both { error }', async () => {
  expect(await call('GET', '/api/build/nothing')).toMatchObject({
    status: 404,
    body: { error: 'no route GET /api/build/nothing; the API is described at /openapi.yaml' },
  });
  expect(await call('GET', '/elsewhere')).toMatchObject({ status: 404 });
  const wrong = await call('DELETE', '/api/build/agents/some-agent');
  expect(wrong.status).toBe(405);
  expect(wrong.headers.get('allow')).toBe('GET, HEAD, PUT, OPTIONS');
  expect(wrong.body).toEqual({ error: 'method DELETE is not allowed on /api/build/agents/some-agent; allowed: GET, HEAD, PUT, OPTIONS' });
});

test('a body over 64 KiB is 413 before it is parsed; nothing is written', async () => {
  const body = JSON.stringify({ ...minimalAgent('Huge'), instructions: 'x'.repeat(70_000) });
  const res = await call('PUT', '/api/build/agents', { headers: { 'content-type': 'application/json' }, body });
  expect(res).toMatchObject({ status: 413, body: { error: 'body is over the 65536-byte limit' } });
  expect((await t.client().GET('/api/build/agents')).data!.data).toEqual([]);
});

const putHead = (length: number) =>
  `PUT /api/build/agents HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.token()}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

test('a client still sending an oversized body reads the 413, sends the rest, and keeps its connection', async () => {
  const connection = rawConnection(t.baseUrl);
  try {
    const total = 5 * 1024 * 1024;
    const first = BODY_LIMIT_BYTES;
    await connection.write(putHead(total) + ' '.repeat(first));
    const refused = await connection.response();
    expect(refused).toMatchObject({ status: 413, body: JSON.stringify({ error: 'body is over the 65536-byte limit' }) });
    expect(refused!.headers.connection).not.toBe('close');
    // Until 2026-11-21 the 413 closed the connection at once: these writes failed (EPIPE or a reset).
    await connection.write(Buffer.alloc(total - first, 0x20));
    await connection.write(`GET /api/build/agents HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.token()}\r\n\r\n`);
    expect(await connection.response()).toMatchObject({ status: 200 });
    expect(connection.closed).toBe(false);
  } finally {
    connection.destroy();
  }
});

test('a refused body that goes on past the discard limit has its connection closed', async () => {
  const connection = rawConnection(t.baseUrl);
  try {
    const total = DISCARD_LIMIT_BYTES * 4;
    await connection.write(putHead(total));
    await connection.write(' '.repeat(BODY_LIMIT_BYTES + 1));
    expect(await connection.response()).toMatchObject({ status: 413 });
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    let sent = BODY_LIMIT_BYTES + 1;
    while (!connection.closed && sent + chunk.length <= total) {
      await connection.write(chunk).catch(() => undefined);
      sent += chunk.length;
    }
    expect(sent).toBeLessThan(total);
    await connection.untilClosed();
  } finally {
    connection.destroy();
  }
});

test('malformed JSON is 400, a non-JSON media type 415, a missing body 400', async () => {
  const json = { 'content-type': 'application/json' };
  expect(await call('POST', '/api/build/agents/validate', { headers: json, body: '{"kind": ' })).toMatchObject({
    status: 400,
    body: { error: expect.stringMatching(/^body: malformed JSON \(/) },
  });
  expect(await call('POST', '/api/build/agents/validate', { headers: { 'content-type': 'text/plain' }, body: '{}' })).toMatchObject({
    status: 415,
    body: { error: "Content-Type: must be application/json (UTF-8), got 'text/plain'" },
  });
  expect(await call('POST', '/api/build/agents/validate', { headers: json })).toMatchObject({
    status: 400,
    body: { error: 'body: required; send a JSON document with Content-Type: application/json' },
  });
  expect(await call('POST', '/api/build/agents/validate', { headers: json, body: Buffer.from([0x7b, 0xff, 0x7d]) })).toMatchObject({
    status: 400,
    body: { error: 'body: is not valid UTF-8' },
  });
  expect(await call('POST', '/api/build/agents/validate', { headers: json, body: '[]' })).toMatchObject({
    status: 400,
    body: { error: 'body: must be of type object' },
  });
});

test('a run id that is not a UUID is 400 on both run reads (rule 9)', async () => {
  expect(await call('GET', '/api/build/runs/not-a-uuid')).toMatchObject({ status: 400, body: { error: 'runId: must be a valid UUID' } });
  expect(await call('GET', '/api/build/workflow-runs/42')).toMatchObject({ status: 400, body: { error: 'runId: must be a valid UUID' } });
});

test('the spec and the docs are served', async () => {
  const spec = await fetch(`${t.baseUrl}/openapi.yaml`);
  expect(spec.status).toBe(200);
  expect(spec.headers.get('content-type')).toMatch(/^application\/yaml/);
  expect(await spec.text()).toContain('operationId: replaceAgent');
  const docs = await fetch(`${t.baseUrl}/docs`);
  if (fs.existsSync(`${generatedDocsDir}/index.html`)) {
    expect(docs.status).toBe(200);
    const html = await docs.text();
    expect(html).toContain('<title>Build API</title>');
    expect(html).not.toMatch(/<script[^>]+src="https?:/);
  } else {
    expect(docs.status).toBe(404);
  }
});

test('every response carries a request id; a caller-supplied one is echoed', async () => {
  const res = await call('GET', '/api/build/agents', { headers: { 'x-request-id': 'trace-123' } });
  expect(res.headers.get('x-request-id')).toBe('trace-123');
  expect((await call('GET', '/healthz')).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
});

test('express adds no weak ETag or X-Powered-By of its own', async () => {
  const res = await call('GET', '/api/build/agents');
  expect(res.headers.get('etag')).toBeNull();
  expect(res.headers.get('x-powered-by')).toBeNull();
});
