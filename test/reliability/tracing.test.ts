// OpenTelemetry traces from a real `build-api serve` process, configured only by the standard
// OTEL_* variables, exported over OTLP/HTTP to a receiver in this test (a small server that collects
// what the exporter sends): a server span per request named by its operationId and continuing the
// caller's traceparent; a run's span, a child of the request that queued it and linked to it; spans
// of its steps, tool calls, model calls and store calls; traceparent sent on http.request calls and
// to the model provider; log lines that name their trace and span. Without OTEL_*: traces off, no trace ids in logs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { minimalAgent } from '../helpers/fixtures';
import { startServer, type ServerProcess } from './server';

jest.setTimeout(120_000);

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number };
  service: string;
}

const SERVER = 2;
const CONSUMER = 5;

function listen(handler: http.RequestListener): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer(handler);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server })));
}

const body = (req: http.IncomingMessage) =>
  new Promise<string>((resolve) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => resolve(raw));
  });

/** An OTLP/HTTP receiver (JSON): every span it was sent, with its service's name. */
async function otlpReceiver() {
  const spans: ExportedSpan[] = [];
  const posts: { path: string; contentType: string }[] = [];
  const { url, server } = await listen(async (req, res) => {
    const text = await body(req);
    posts.push({ path: req.url ?? '', contentType: String(req.headers['content-type']) });
    const payload = JSON.parse(text) as {
      resourceSpans: { resource: { attributes: ExportedSpan['attributes'] }; scopeSpans: { spans: Omit<ExportedSpan, 'service'>[] }[] }[];
    };
    for (const rs of payload.resourceSpans) {
      const service = String(rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue);
      for (const ss of rs.scopeSpans) for (const span of ss.spans) spans.push({ ...span, service });
    }
    res.setHeader('content-type', 'application/json');
    res.end('{}');
  });
  return { url, server, spans, posts };
}

const attr = (span: ExportedSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value && (value.stringValue ?? value.intValue ?? value.boolValue);
};

async function until<T>(what: string, find: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const traceparent = () => {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
};

describe('with an OTLP exporter configured', () => {
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  let downstream: { url: string; server: http.Server };
  let provider: { url: string; server: http.Server };
  const downstreamTraceparents: string[] = [];
  const providerTraceparents: string[] = [];
  let s: ServerProcess;

  beforeAll(async () => {
    receiver = await otlpReceiver();
    downstream = await listen((req, res) => {
      downstreamTraceparents.push(String(req.headers.traceparent));
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    provider = await listen(async (req, res) => {
      await body(req);
      providerTraceparents.push(String(req.headers.traceparent));
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'x', choices: [{ index: 0, message: { role: 'assistant', content: 'traced' }, finish_reason: 'stop' }] }));
    });
    s = await startServer({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'build-api-under-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      HTTP_TOOL_ALLOW_PRIVATE: 'true',
      OPENAI_BASE_URL: provider.url,
      OPENAI_MODELS: 'traced-model',
    });
  });
  afterAll(async () => {
    await s?.dispose();
    for (const server of [receiver?.server, downstream?.server, provider?.server]) server?.close();
  });

  test("a request's server span is named by its operationId and continues the caller's traceparent; its log line names the span", async () => {
    const caller = traceparent();
    const res = await fetch(`${s.baseUrl}/api/build/agents`, { headers: { authorization: `Bearer ${s.token()}`, traceparent: caller.header } });
    expect(res.status).toBe(200);
    const span = await until('the listAgents span', () => receiver.spans.find((x) => x.traceId === caller.traceId && x.name === 'listAgents'));
    expect(span).toMatchObject({ kind: SERVER, parentSpanId: caller.spanId, service: 'build-api-under-test' });
    expect(attr(span, 'http.route')).toBe('/api/build/agents');
    expect(Number(attr(span, 'http.response.status_code'))).toBe(200);
    expect(receiver.posts[0]).toMatchObject({ path: '/v1/traces', contentType: expect.stringContaining('application/json') });
    // The access log line of that request names its trace and span.
    const line = await until('the request log line', () =>
      s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request' && l.trace_id === caller.traceId),
    );
    expect(line).toMatchObject({ span_id: span.spanId, path: '/api/build/agents' });
  });

  test("a workflow run's span is a child of the request that queued it (and linked to it), with its step's, tool call's and store calls' spans; the http.request call carries the trace", async () => {
    const api = s.client();
    const created = await api.PUT('/api/build/workflows', {
      body: {
        kind: 'service.workflow/v1',
        slug: 'traced',
        name: 'Traced',
        steps: [{ id: 'call', kind: 'tool', tool: 'http.request', args: { method: 'GET', url: `${downstream.url}/hit` } }],
      },
    });
    expect(created.response.status).toBe(201);
    const caller = traceparent();
    const res = await fetch(`${s.baseUrl}/api/build/workflows/traced/test`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.token()}`, 'content-type': 'application/json', traceparent: caller.header },
      body: '{}',
    });
    expect(res.status).toBe(202);
    const inTrace = () => receiver.spans.filter((x) => x.traceId === caller.traceId);
    const request = await until('the testWorkflow span', () => inTrace().find((x) => x.name === 'testWorkflow'));
    const run = await until('the run span', () => inTrace().find((x) => x.name === 'workflow run'));
    expect(run).toMatchObject({
      kind: CONSUMER,
      parentSpanId: request.spanId,
      links: [expect.objectContaining({ traceId: caller.traceId, spanId: request.spanId })],
    });
    expect(attr(run, 'build.run.id')).toBe(((await res.json()) as { data: { run_id: string } }).data.run_id);
    expect(attr(run, 'build.run.status')).toBe('succeeded');
    const step = await until('the step span', () => inTrace().find((x) => x.name === 'workflow step'));
    expect(step.parentSpanId).toBe(run.spanId);
    expect(attr(step, 'build.step.id')).toBe('call');
    const tool = await until('the tool span', () => inTrace().find((x) => x.name === 'tool http.request'));
    expect(tool.parentSpanId).toBe(step.spanId);
    // The downstream service got the tool call's span as its parent.
    expect(downstreamTraceparents).toContain(`00-${caller.traceId}-${tool.spanId}-01`);
    // Store calls are spans of the request (accepting the run) and of the run (its progress and end).
    const store = await until('store spans', () => {
      const spans = inTrace().filter((x) => x.name.startsWith('store '));
      return spans.some((x) => x.parentSpanId === request.spanId) && spans.some((x) => x.parentSpanId === run.spanId) ? spans : undefined;
    });
    expect(store.find((x) => x.name === 'store runs.accept')?.parentSpanId).toBe(request.spanId);
  });

  test("an agent run's model call is a span, and the model provider receives the trace", async () => {
    const api = s.client();
    const created = await api.PUT('/api/build/agents', { body: { ...minimalAgent('Traced agent'), model: 'traced-model' } });
    expect(created.response.status).toBe(201);
    const caller = traceparent();
    const res = await fetch(`${s.baseUrl}/api/build/agents/${created.data!.data.document.slug}/test`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.token()}`, 'content-type': 'application/json', traceparent: caller.header },
      body: JSON.stringify({ prompt: 'hello' }),
    });
    expect(res.status).toBe(202);
    const chat = await until('the model call span', () => receiver.spans.find((x) => x.traceId === caller.traceId && x.name === 'chat traced-model'));
    // The run's span ends after its model call's, so it may come in a later export.
    const run = await until('the agent run span', () => receiver.spans.find((x) => x.traceId === caller.traceId && x.name === 'agent run'));
    expect(chat.parentSpanId).toBe(run.spanId);
    expect(attr(chat, 'gen_ai.request.model')).toBe('traced-model');
    expect(providerTraceparents).toContain(`00-${caller.traceId}-${chat.spanId}-01`);
  });
});

test('the default protocol is http/protobuf: the receiver gets protobuf that names the span', async () => {
  const bodies: Buffer[] = [];
  const types: string[] = [];
  const { url, server } = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks));
      types.push(String(req.headers['content-type']));
      res.setHeader('content-type', 'application/x-protobuf');
      res.end();
    });
  });
  const s = await startServer({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_BSP_SCHEDULE_DELAY: '100' });
  try {
    expect((await fetch(`${s.baseUrl}/api/build/agents`, { headers: { authorization: `Bearer ${s.token()}` } })).status).toBe(200);
    await until('a protobuf export naming listAgents', () => (bodies.some((b) => b.includes('listAgents')) ? true : undefined));
    expect(types[0]).toBe('application/x-protobuf');
  } finally {
    await s.dispose();
    server.close();
  }
});

test('without OTEL_* the start-up line says traces are off, and log lines name no trace', async () => {
  const s = await startServer({ HTTP_TOOL_ALLOW_PRIVATE: 'true' });
  try {
    const res = await fetch(`${s.baseUrl}/api/build/agents`, { headers: { authorization: `Bearer ${s.token()}`, traceparent: traceparent().header } });
    expect(res.status).toBe(200);
    const listening = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'build-api listening');
    expect(listening).toMatchObject({ traces: 'off' });
    const line = await until('the request log line', () => s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request'));
    expect(line).not.toHaveProperty('trace_id');
  } finally {
    await s.dispose();
  }
});
