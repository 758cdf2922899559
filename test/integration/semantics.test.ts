// Semantic rules through HTTP: validate, create and replace report a document the same way, in one
// 400 that lists every problem with its path, and a refused write leaves the stored state unchanged.
import { startService, type TestService } from '../helpers/service';
import { minimalAgent, replaceBody, storedPart } from '../helpers/fixtures';

let t: TestService;
beforeAll(async () => {
  t = await startService({}, (config) => {
    config.limits.triggers_per_agent = 2;
  });
  await t.service.store.connections.upsert('ws-1', { ref: 'kv-main', app: 'kv', label: null, status: 'connected' });
});
afterAll(() => t.close());

const badAgent = () => ({
  ...minimalAgent('Bad'),
  model: 'gpt-unknown',
  tools: { apps: ['kv', 'gitlab'], connections: ['kv-main', 'gone'], disabled_tools: [], approval: 'write' as const },
  triggers: [{ kind: 'poll' as const, name: 'P', tool: 'kv.set', cron: '*/5 * * * *', timezone: 'Mars/Base' }],
});
const EXPECTED = [
  "body.model: 'gpt-unknown' is not a model of the catalog; GET /api/build/catalog lists them",
  "body.tools.apps[1]: 'gitlab' is not an app of the catalog; GET /api/build/catalog lists them",
  "body.tools.connections[1]: 'gone' is not a connection of this workspace; GET /api/build/connections lists them",
  "body.triggers[0].tool: 'kv.set' is not read-only; a poll trigger's detector must be a read-only tool",
  "body.triggers[0].timezone: 'Mars/Base' is not an IANA timezone (such as Europe/Berlin or UTC)",
].join('; ');

test('validate, create and replace report the same problems in one 400; nothing is written', async () => {
  const validate = await t.client().POST('/api/build/agents/validate', { body: badAgent() });
  expect(validate.response.status).toBe(400);
  expect(validate.error).toEqual({ error: EXPECTED });

  const create = await t.client().PUT('/api/build/agents', { body: badAgent() });
  expect(create.response.status).toBe(400);
  expect(create.error).toEqual({ error: EXPECTED });
  expect((await t.client().GET('/api/build/agents')).data!.data).toEqual([]);

  const good = await t.client().PUT('/api/build/agents', { body: minimalAgent('Good') });
  const doc = good.data!.data.document;
  const replace = await t.client().PUT('/api/build/agents/{ref}', {
    params: { path: { ref: doc.id }, header: { 'If-Match': good.response.headers.get('etag')! } },
    body: { ...replaceBody(doc), ...badAgent(), name: 'Good' },
  });
  expect(replace.response.status).toBe(400);
  expect(replace.error).toEqual({ error: EXPECTED });
  expect((await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } })).data!.data).toEqual(doc);
});

test('trigger count over the workspace limit is 400', async () => {
  const hooks = ['A', 'B', 'C'].map((name) => ({ kind: 'webhook' as const, name }));
  const res = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Many hooks'), triggers: hooks } });
  expect(res.response.status).toBe(400);
  expect(res.error).toEqual({ error: 'body.triggers: has 3 triggers; the workspace limit is 2' });
});

test('a workflow with a cycle, a reference to a step it does not wait for and an unknown agent', async () => {
  const body = {
    kind: 'service.workflow/v1' as const,
    slug: 'tangled',
    name: 'Tangled',
    steps: [
      { id: 'a', kind: 'tool' as const, tool: 'core.echo', after: ['b'] },
      { id: 'b', kind: 'tool' as const, tool: 'core.echo', after: ['a'] },
      { id: 'c', kind: 'tool' as const, tool: 'core.echo', args: { v: '{{steps.a.output}}' } },
      { id: 'd', kind: 'agent' as const, agent: 'nobody', prompt: 'hi' },
    ],
  };
  const expected = {
    error: [
      'body.steps: the after lists form a cycle: a → b → a (each step waits for the one before it)',
      "body.steps[2].args.v: {{steps.a.output}}: this step does not wait for step 'a'; add it to after (directly or through another step)",
      "body.steps[3].agent: 'nobody' is not an agent this workflow's space can use (the workspace's agents, and its own team's); GET /api/build/agents lists them",
    ].join('; '),
  };
  const validate = await t.client().POST('/api/build/workflows/validate', { body });
  expect(validate.error).toEqual(expected);
  const create = await t.client().PUT('/api/build/workflows', { body });
  expect(create.response.status).toBe(400);
  expect(create.error).toEqual(expected);
  expect((await t.client().GET('/api/build/workflows')).data!.data).toEqual([]);
});

describe('rotate webhook', () => {
  async function agentWithTriggers() {
    const res = await t.client().PUT('/api/build/agents', {
      body: {
        ...minimalAgent('Rotating'),
        triggers: [
          { kind: 'webhook', name: 'Inbound' },
          { kind: 'poll', name: 'Poll', tool: 'kv.list', cron: '0 * * * *', timezone: 'UTC' },
        ],
      },
    });
    expect(res.response.status).toBe(201);
    return res.data!.data;
  }

  test('mints a new one-time URL, replaces the stored hash, and is a write', async () => {
    const created = await agentWithTriggers();
    const hook = created.document.triggers[0]!;
    const res = await t.client().POST('/api/build/agents/{ref}/rotate-webhook', {
      params: { path: { ref: created.document.slug } },
      body: { trigger_id: hook.id },
    });
    expect(res.response.status).toBe(200);
    const rotated = res.data!.data;
    expect(rotated.trigger_id).toBe(hook.id);
    expect(rotated.url).toMatch(new RegExp(`^http://build\\.test/hooks/${hook.id}/whk_`));
    expect(rotated.url).not.toBe(created.webhook_urls![0]!.url);
    expect(rotated.url.split('/').pop()!.slice(0, 8)).toBe(rotated.secret_prefix);

    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: created.document.id } } });
    const after = read.data!.data;
    expect(storedPart(after).triggers[0]).toEqual({ ...hook, secret_prefix: rotated.secret_prefix });
    expect(after.updated_at > created.document.updated_at).toBe(true);
    expect(res.response.headers.get('etag')).toBe(`"${after.updated_at}"`);
    expect(JSON.stringify(after)).not.toContain(rotated.url.split('/').pop());
  });

  test('a trigger id that is not one of its webhooks is 404', async () => {
    const created = await agentWithTriggers();
    for (const triggerId of [created.document.triggers[1]!.id, '0e1d2c3b-4a59-4687-a5b4-c3d2e1f0a9b8']) {
      const res = await t.client().POST('/api/build/agents/{ref}/rotate-webhook', {
        params: { path: { ref: created.document.id } },
        body: { trigger_id: triggerId },
      });
      expect(res.response.status).toBe(404);
      expect(res.error).toEqual({ error: `body.trigger_id: agent '${created.document.slug}' has no webhook trigger '${triggerId}'` });
    }
  });

  test('an archived agent refuses rotation with 409; nothing changes', async () => {
    const created = await agentWithTriggers();
    const archived = await t.client().POST('/api/build/agents/{ref}/status', {
      params: { path: { ref: created.document.id }, header: { 'If-Match': `"${created.document.updated_at}"` } },
      body: { status: 'archived' },
    });
    expect(archived.response.status).toBe(200);
    const res = await t.client().POST('/api/build/agents/{ref}/rotate-webhook', {
      params: { path: { ref: created.document.id } },
      body: { trigger_id: created.document.triggers[0]!.id },
    });
    expect(res.response.status).toBe(409);
    expect(res.error).toEqual({ error: `agent '${created.document.slug}' is archived; set its status to draft or active before rotating a webhook` });
    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: created.document.id } } });
    expect(storedPart(read.data!.data)).toEqual(archived.data!.data.document);
  });

  test('a trigger_id that is not a UUID is 400', async () => {
    const res = await t.client().POST('/api/build/agents/{ref}/rotate-webhook', {
      params: { path: { ref: 'whatever' } },
      body: { trigger_id: 'abc' },
    });
    expect(res.response.status).toBe(400);
    expect(res.error).toEqual({ error: 'body.trigger_id: must be a valid UUID' });
  });
});

describe('template references and input names see own properties only', () => {
  const put = (body: string) =>
    fetch(`${t.baseUrl}/api/build/workflows`, { method: 'PUT', headers: { authorization: `Bearer ${t.token()}`, 'content-type': 'application/json' }, body });

  test.each(['constructor', '__proto__', 'tostring', 'hasownproperty'])('{{inputs.%s}} without such an input is 400', async (name) => {
    const res = await put(
      JSON.stringify({
        kind: 'service.workflow/v1',
        slug: `ref-${name.replace(/_/g, '')}`,
        name: 'R',
        steps: [{ id: 'a', kind: 'tool', tool: 'core.echo', args: { v: `{{inputs.${name}}}` } }],
      }),
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: `body.steps[0].args.v: {{inputs.${name}}} names no declared input; declare '${name}' in inputs` });
  });

  test.each(['__proto__', 'constructor', 'prototype'])('an input named %s is 400 and nothing is written', async (name) => {
    // Raw JSON: JSON.parse makes "__proto__" an own member, as it does for a client's request.
    const res = await put(
      `{"kind":"service.workflow/v1","slug":"reserved-input","name":"R","inputs":{"${name}":{"description":"d","default":"x"}},"steps":[{"id":"a","kind":"tool","tool":"core.echo","args":{"v":"{{inputs.${name}}}"}}]}`,
    );
    expect(res.status).toBe(400);
    // __proto__ is refused in any body before the document's rules see it (http/body.ts).
    const rule =
      name === '__proto__'
        ? 'the member name __proto__ is refused (it names the prototype of every JavaScript object)'
        : `'${name}' is a reserved name; input names cannot be __proto__, constructor or prototype`;
    expect(((await res.json()) as { error: string }).error).toContain(`body.inputs.${name}: ${rule}`);
    expect((await t.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: 'reserved-input' } } })).response.status).toBe(404);
  });
});
