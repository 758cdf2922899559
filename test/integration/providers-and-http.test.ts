// The OpenAI-compatible provider against a local fake that scripts tool calls, and the http tool's
// address rules (a loopback server stands in for "the internet").
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun, waitForWorkflowRun } from '../helpers/runs';

function listen(handler: http.RequestListener): Promise<{ url: string; close: () => void }> {
  const server = http.createServer(handler);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() })),
  );
}

describe('OpenAI-compatible provider', () => {
  let fake: { url: string; close: () => void };
  let t: TestService;
  const requests: { headers: http.IncomingHttpHeaders; body: Record<string, unknown> }[] = [];

  beforeAll(async () => {
    fake = await listen((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = JSON.parse(raw) as { messages: { role: string }[] };
        requests.push({ headers: req.headers, body });
        const toolResults = body.messages.filter((m) => m.role === 'tool').length;
        const message =
          toolResults === 0
            ? {
                role: 'assistant',
                content: null,
                tool_calls: [{ id: 'c1', type: 'function', function: { name: 'kv__set', arguments: '{"key":"from-openai","value":42}' } }],
              }
            : { role: 'assistant', content: 'stored 42' };
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ id: 'x', choices: [{ index: 0, message, finish_reason: 'stop' }] }));
      });
    });
    t = await startService({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', OPENAI_MODELS: 'fake-1,fake-2' });
  });
  afterAll(async () => {
    await t.close();
    fake.close();
  });

  test('its models are in the catalog', async () => {
    const catalog = await t.client().GET('/api/build/catalog');
    expect(catalog.data!.data.models.map((m) => [m.id, m.tier])).toEqual([
      ['builtin/scripted', 'test'],
      ['fake-1', 'standard'],
      ['fake-2', 'standard'],
    ]);
  });

  test('a run calls the tool the model asked for and ends with its text', async () => {
    const created = await t.client().PUT('/api/build/agents', {
      body: {
        ...minimalAgent('Open'),
        model: 'fake-1',
        max_steps: 5,
        reasoning_effort: 'high',
        instructions: 'Be brief.',
        tools: { apps: ['kv'], connections: 'all', disabled_tools: [], approval: 'destructive' },
      },
    });
    const started = await t
      .client()
      .POST('/api/build/agents/{ref}/test', { params: { path: { ref: created.data!.data.document.id } }, body: { prompt: 'store 42' } });
    const run = await waitForAgentRun(t, started.data!.data.run_id);
    expect(run).toMatchObject({ status: 'succeeded', final_text: 'stored 42', steps: 2, credits: 2 });
    expect(run.tool_calls).toEqual([
      { id: 'c1', tool: 'kv.set', args: { key: 'from-openai', value: 42 }, status: 'succeeded', output: { key: 'from-openai' }, error: null },
    ]);
    expect(await t.service.store.kv.get('ws-1', 'from-openai')).toBe(42);

    const first = requests[0]!;
    expect(first.headers.authorization).toBe('Bearer sk-test');
    expect(first.body).toMatchObject({ model: 'fake-1', reasoning_effort: 'high', tool_choice: 'auto' });
    expect(first.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'store 42' },
    ]);
    expect((first.body.tools as { function: { name: string } }[]).map((tool) => tool.function.name)).toEqual(['kv__get', 'kv__list', 'kv__set', 'kv__delete']);
    const second = requests[1]!.body.messages as Record<string, unknown>[];
    expect(second.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'kv__set', arguments: '{"key":"from-openai","value":42}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: '{"key":"from-openai"}' },
    ]);
  });

  test("the model is offered the agent's workflows as tools and told its skills by name and description", async () => {
    const flow = await t.client().PUT('/api/build/workflows', {
      body: {
        kind: 'service.workflow/v1',
        slug: 'refund-order',
        name: 'Refund order',
        description: 'Refunds one order.',
        inputs: { order_id: { description: 'The order.' }, reason: { default: 'customer request' } },
        steps: [{ id: 'a', kind: 'tool', tool: 'kv.set', args: { key: 'refund', value: '{{inputs.order_id}}' } }],
      },
    });
    expect(flow.response.status).toBe(201);
    const created = await t.client().PUT('/api/build/agents', {
      body: { ...minimalAgent('Reach'), model: 'fake-1', max_steps: 3, instructions: 'Be brief.', skills: ['kv-records'], workflows: ['refund-order'] },
    });
    expect(created.response.status).toBe(201);
    const seen = requests.length;
    const started = await t
      .client()
      .POST('/api/build/agents/{ref}/test', { params: { path: { ref: created.data!.data.document.id } }, body: { prompt: 'refund A-1' } });
    await waitForAgentRun(t, started.data!.data.run_id);
    const { messages, tools } = requests[seen]!.body as { messages: { role: string; content: string }[]; tools: { function: Record<string, unknown> }[] };
    expect(messages[0]!.role).toBe('system');
    expect(messages[0]!.content).toMatch(/^Be brief\.\n\n## Skills\n/);
    expect(messages[0]!.content).toContain('- kv-records: Keep durable records across runs with the kv app');
    expect(tools.map((tool) => tool.function.name).sort()).toEqual(['skills__file', 'skills__load', 'workflows__refund-order']);
    const workflowTool = tools.find((tool) => tool.function.name === 'workflows__refund-order')!.function;
    expect(workflowTool).toMatchObject({
      description: 'Refunds one order.',
      parameters: {
        type: 'object',
        additionalProperties: false,
        required: ['order_id'],
        properties: { order_id: { description: 'The order.' }, reason: { default: 'customer request' } },
      },
    });
  });
});

describe('OpenAI-compatible provider failures', () => {
  let mode: 'error' | 'huge' = 'error';
  let fake: { url: string; close: () => void };
  let t: TestService;
  beforeAll(async () => {
    fake = await listen((req, res) => {
      req.resume();
      if (mode === 'error') {
        res.writeHead(500, { 'content-type': 'application/json' });
        return void res.end(
          JSON.stringify({ error: { message: 'upstream shard db-7.internal failed; org org-Secret123; prompt was: confidential', request_id: 'req_abc' } }),
        );
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      const block = Buffer.alloc(1024 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < 64 && res.write(block)) sent++;
        if (sent < 64) res.once('drain', pump);
        else res.end('{}');
      };
      pump();
    });
    t = await startService({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', OPENAI_MODELS: 'fake-1' });
  });
  afterAll(async () => {
    await t.close();
    fake.close();
  });

  async function runOnce() {
    const created = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent(`Fails ${Math.random()}`), model: 'fake-1' } });
    const started = await t
      .client()
      .POST('/api/build/agents/{ref}/test', { params: { path: { ref: created.data!.data.document.id } }, body: { prompt: 'hi' } });
    return waitForAgentRun(t, started.data!.data.run_id, undefined, 20_000);
  }

  test("the provider's error text stays out of the run: the caller reads only its status", async () => {
    mode = 'error';
    const run = await runOnce();
    expect(run.status).toBe('failed');
    expect(run.error).toBe('the model provider answered HTTP 500');
    expect(JSON.stringify(run)).not.toMatch(/db-7|org-Secret|confidential|req_abc/);
  });

  test('an answer over 4 MiB is not read to its end', async () => {
    mode = 'huge';
    const run = await runOnce();
    expect(run.status).toBe('failed');
    expect(run.error).toBe("the model provider's answer is over 4 MiB");
  }, 30_000);
});

describe('http.request tool', () => {
  let target: { url: string; close: () => void };
  beforeAll(async () => {
    target = await listen((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ method: req.method, path: req.url }));
    });
  });
  afterAll(() => target.close());

  async function runHttp(t: TestService, url: string) {
    const created = await t.client().PUT('/api/build/agents', {
      body: {
        ...minimalAgent(`Http ${Math.random()}`),
        max_steps: 3,
        tools: { apps: ['http'], connections: 'all', disabled_tools: [], approval: 'destructive' },
      },
    });
    const prompt = `/call http.request ${JSON.stringify({ method: 'GET', url })}`;
    const started = await t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: created.data!.data.document.id } }, body: { prompt } });
    return (await waitForAgentRun(t, started.data!.data.run_id)).tool_calls[0]!;
  }

  test('private, loopback and link-local addresses are refused, also behind a host name', async () => {
    const t = await startService();
    try {
      const port = new URL(target.url).port;
      for (const [url, address] of [
        [`${target.url}/x`, '127.0.0.1'],
        [`http://localhost:${port}/x`, 'localhost resolves to'],
        ['http://169.254.169.254/latest/meta-data', '169.254.169.254'],
        ['http://10.1.2.3/', '10.1.2.3'],
        ['http://[::1]:80/', '::1'],
      ]) {
        const call = await runHttp(t, url as string);
        expect(call.status).toBe('failed');
        expect(call.error).toContain(address);
        expect(call.error).toContain('refused');
      }
    } finally {
      await t.close();
    }
  });

  test('HTTP_TOOL_ALLOW_PRIVATE=true lets a local setup reach loopback', async () => {
    const t = await startService({ HTTP_TOOL_ALLOW_PRIVATE: 'true' });
    try {
      const call = await runHttp(t, `${target.url}/hello?x=1`);
      expect(call.status).toBe('succeeded');
      expect(call.output).toMatchObject({ status: 200, body: { method: 'GET', path: '/hello?x=1' } });
    } finally {
      await t.close();
    }
  });

  test("a workflow's http.request steps cannot reach the special addresses a deny-list let through", async () => {
    const t = await startService();
    try {
      const urls = [
        'http://[::127.0.0.1]/',
        'http://[2002:7f00:1::1]/',
        'http://[2001::1]/',
        'http://[64:ff9b:1::1]/',
        'http://[fec0::1]/',
        'http://192.88.99.1/',
        'http://[::ffff:127.0.0.1]/',
        'http://0x7f.1/',
      ];
      const steps = urls.map((url, i) => ({ id: `s${i}`, kind: 'tool' as const, tool: 'http.request', args: { method: 'GET', url } }));
      const created = await t.client().PUT('/api/build/workflows', { body: { kind: 'service.workflow/v1', slug: 'ssrf', name: 'SSRF', steps } });
      expect(created.response.status).toBe(201);
      const started = await t.client().POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'ssrf' } }, body: { input: {} } });
      const run = await waitForWorkflowRun(t, started.data!.data.run_id);
      expect(run.status).toBe('failed');
      for (const [i] of urls.entries()) {
        const result = run.step_results[`s${i}`]!;
        expect({ url: urls[i], status: result.status, error: result.error }).toEqual({
          url: urls[i],
          status: 'failed',
          error: expect.stringMatching(/^refused: .* is not a public \(global unicast\) address$/),
        });
      }
    } finally {
      await t.close();
    }
  });
});
