import { startService, type TestService } from '../helpers/service';

let t: TestService;
beforeAll(async () => {
  t = await startService();
  await t.service.store.connections.upsert('ws-1', { ref: 'kv-main', app: 'kv', label: 'Main store', status: 'connected' });
  await t.service.store.connections.upsert('ws-1', { ref: 'kv-old', app: 'kv', label: null, status: 'expired' });
  await t.service.store.connections.upsert('ws-2', { ref: 'other', app: 'http', label: null, status: 'connected' });
});
afterAll(() => t.close());

test('the catalog lists the built-in model, apps with tool and connection counts, trigger types and limits', async () => {
  const { data, response } = await t.client().GET('/api/build/catalog');
  expect(response.status).toBe(200);
  expect(data!.data).toEqual({
    models: [{ id: 'builtin/scripted', label: 'Built-in scripted model (deterministic)', tier: 'test' }],
    apps: [
      { slug: 'core', name: 'Core', connections: 0, tools: 5 },
      { slug: 'http', name: 'HTTP', connections: 0, tools: 1 },
      { slug: 'kv', name: 'Key-value store', connections: 2, tools: 4 },
      { slug: 'time', name: 'Time', connections: 0, tools: 1 },
      { slug: 'email', name: 'Email', connections: 0, tools: 2 },
      { slug: 'whatsapp', name: 'WhatsApp', connections: 0, tools: 1 },
      { slug: 'github', name: 'GitHub', connections: 0, tools: 0 },
      { slug: 'stripe', name: 'Stripe', connections: 0, tools: 0 },
      { slug: 'slack', name: 'Slack', connections: 0, tools: 0 },
      { slug: 'standard-webhooks', name: 'Standard Webhooks', connections: 0, tools: 0 },
    ],
    // The marketplace: the repository's skills/ (SKILLS_DIR unset).
    skills: ['careful-writes', 'http-requests', 'kv-records', 'workflow-delegation'].map((slug) => ({
      slug,
      name: slug,
      description: expect.any(String),
      version: '1.0',
    })),
    trigger_types: ['webhook', 'poll', 'app_event'],
    limits: { document_bytes: 65536, agents: 200, workflows: 200, triggers_per_agent: 20, workflow_steps: 10, agent_steps: 40 },
  });
});

test('an app lists its tools with flags and argument schemas', async () => {
  const { data, response } = await t.client().GET('/api/build/catalog/apps/{app}', { params: { path: { app: 'kv' } } });
  expect(response.status).toBe(200);
  const tools = data!.data.tools;
  expect(tools.map((tool) => [tool.slug, tool.read_only, tool.destructive])).toEqual([
    ['kv.get', true, false],
    ['kv.list', true, false],
    ['kv.set', false, false],
    ['kv.delete', false, true],
  ]);
  expect(tools[0]!.args_schema).toMatchObject({ type: 'object', required: ['key'] });
  expect(data!.data.connections).toBe(2);
});

test('an unknown app is 404', async () => {
  const res = await t.client().GET('/api/build/catalog/apps/{app}', { params: { path: { app: 'gitlab' } } });
  expect(res.response.status).toBe(404);
  expect(res.error).toEqual({ error: "app 'gitlab' not found; GET /api/build/catalog lists the apps" });
});

test('connections are per workspace, ordered by ref', async () => {
  const mine = await t.client().GET('/api/build/connections');
  expect(mine.data!.data).toEqual([
    { ref: 'kv-main', app: 'kv', label: 'Main store', status: 'connected' },
    { ref: 'kv-old', app: 'kv', label: null, status: 'expired' },
  ]);
  const theirs = await t.client(t.token({ workspace: 'ws-2' })).GET('/api/build/connections');
  expect(theirs.data!.data).toEqual([{ ref: 'other', app: 'http', label: null, status: 'connected' }]);
});
