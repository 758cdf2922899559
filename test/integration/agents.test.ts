import { startService, type TestService } from '../helpers/service';
import { agentCreate, minimalAgent, replaceBody } from '../helpers/fixtures';
import { parseStampMicros } from '../../src/domain/stamps';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

async function create(name: string, overrides = {}) {
  const { data, response } = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent(name), ...overrides } });
  expect(response.status).toBe(201);
  return { doc: data!.data.document, etag: response.headers.get('etag')! };
}

describe('create agent', () => {
  test('returns 201 with the stored document, ETag, Location and version 1', async () => {
    const { data, response } = await t.client().PUT('/api/build/agents', { body: agentCreate({ slug: 'create-full' }) });
    expect(response.status).toBe(201);
    const result = data!.data;
    expect(result.version).toBe(1);
    expect(result.document.status).toBe('draft');
    expect(result.document.updated_at).toMatch(STAMP);
    expect(response.headers.get('etag')).toBe(`"${result.document.updated_at}"`);
    expect(response.headers.get('location')).toBe(`/api/build/agents/${result.document.id}`);
    expect(result.applied).toEqual(['document', 'triggers', 'webhooks']);
    expect(result.changes).toEqual(["agent 'create-full' created", "trigger 'Inbound' added"]);
    expect(result.webhook_urls).toEqual([{ trigger_id: result.document.triggers[0]!.id, url: expect.stringMatching(/^http:\/\/build\.test\/hooks\//) }]);
    const trigger = result.document.triggers[0]!;
    expect(trigger.id).toMatch(/^[0-9a-f-]{36}$/);

    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: result.document.id } } });
    expect(read.response.status).toBe(200);
    // The read is the stored document with each trigger's live status (nothing fired yet).
    expect(read.data!.data).toEqual({
      ...result.document,
      triggers: result.document.triggers.map((tr) => ({ ...tr, last_fired_at: null, next_fire_at: null, last_error: null })),
    });
    expect(read.response.headers.get('etag')).toBe(response.headers.get('etag'));
  });

  test('fills reasoning_effort and trigger defaults, so reads carry every member', async () => {
    const { doc } = await create('Defaults', {
      triggers: [{ kind: 'poll', name: 'Poll', tool: 'kv.list', cron: '*/5 * * * *', timezone: 'UTC' }],
    });
    expect(doc.reasoning_effort).toBeNull();
    expect(doc.triggers[0]).toEqual({
      kind: 'poll',
      id: expect.any(String),
      name: 'Poll',
      prompt: null,
      enabled: true,
      tool: 'kv.list',
      args: {},
      cron: '*/5 * * * *',
      timezone: 'UTC',
    });
  });

  test('derives a free slug from the name when none is given', async () => {
    const first = await create('Ünïcode Name!');
    const second = await create('Ünïcode Name!');
    expect(first.doc.slug).toBe('unicode-name');
    expect(second.doc.slug).toBe('unicode-name-2');
  });

  test('a taken slug is 409 and writes nothing', async () => {
    await create('Taken', { slug: 'taken-slug' });
    const before = await t.client().GET('/api/build/agents');
    const { error, response } = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Other'), slug: 'taken-slug' } });
    expect(response.status).toBe(409);
    expect(error).toEqual({ error: expect.stringContaining("body.slug: 'taken-slug' is taken") });
    const after = await t.client().GET('/api/build/agents');
    expect(after.data!.data).toEqual(before.data!.data);
  });

  test('id or updated_at in a create body is 400 naming the member', async () => {
    const body = { ...minimalAgent('With id'), id: '3f6c1d2e-4b5a-4c7d-8e9f-0a1b2c3d4e5f', updated_at: '2026-01-01T00:00:00Z' };
    const { error, response } = await t.client().PUT('/api/build/agents', { body: body as never });
    expect(response.status).toBe(400);
    expect(error!.error).toContain('body.id: not allowed here');
    expect(error!.error).toContain('body.updated_at: not allowed here');
  });

  test('schema violations are 400 with every path and rule', async () => {
    const body = { ...minimalAgent('x'), name: '', max_steps: 41, tools: { apps: [], connections: [], disabled_tools: [], approval: 'never' } };
    const { error, response } = await t.client().PUT('/api/build/agents', { body: body as never });
    expect(response.status).toBe(400);
    expect(error!.error).toBe(
      'body.name: must be at least 1 character long; body.max_steps: must be <= 40; body.tools.connections: must have at least 1 item; body.tools.approval: must be one of destructive, write',
    );
  });

  test('an unknown trigger kind names the allowed kinds', async () => {
    const body = { ...minimalAgent('x'), triggers: [{ kind: 'email', name: 'Mail' }] };
    const { error, response } = await t.client().PUT('/api/build/agents', { body: body as never });
    expect(response.status).toBe(400);
    expect(error!.error).toBe('body.triggers[0].kind: must be one of webhook, poll, app_event');
  });

  test('a trigger or step that is not an object is 400, not passed on (found by the fuzzer)', async () => {
    const res = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('x'), triggers: ['webhook'] } as never });
    expect(res.response.status).toBe(400);
    expect(res.error).toEqual({ error: 'body.triggers[0]: must be of type object' });
    const wf = await t.client().POST('/api/build/workflows/validate', { body: { kind: 'service.workflow/v1', slug: 'w', name: 'W', steps: [42] } as never });
    expect(wf.error).toEqual({ error: 'body.steps[0]: must be of type object' });
  });

  test('a trigger id the agent does not own is 400', async () => {
    const body = { ...minimalAgent('x'), triggers: [{ kind: 'webhook' as const, name: 'W', id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d' }] };
    const { error, response } = await t.client().PUT('/api/build/agents', { body });
    expect(response.status).toBe(400);
    expect(error!.error).toMatch(/^body\.triggers\[0\]\.id: '9a8b7c6d-.*' is not a trigger of this agent/);
  });

  test('status in a create body is ignored: new agents are draft', async () => {
    const { doc } = await create('Status ignored', { status: 'active' });
    expect(doc.status).toBe('draft');
  });
});

describe('read and list agents', () => {
  test('a ref that names no agent is 404, whatever its form', async () => {
    for (const ref of ['no-such-agent', 'Not A Slug', '3f6c1d2e-4b5a-4c7d-8e9f-0a1b2c3d4e5f']) {
      const missing = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref } } });
      expect(missing.response.status).toBe(404);
      expect(missing.error).toEqual({ error: `agent '${ref}' not found in this workspace` });
    }
  });

  test('list is ordered by slug and shows the list-item members only', async () => {
    const { data } = await t.client().GET('/api/build/agents');
    const slugs = data!.data.map((a) => a.slug);
    expect(slugs).toEqual([...slugs].sort());
    for (const item of data!.data) expect(Object.keys(item).sort()).toEqual(['folder', 'id', 'name', 'slug', 'space', 'status', 'updated_at']);
  });

  test('another workspace sees none of these agents and gets 404 for them', async () => {
    const { doc } = await create('Private');
    const other = t.client(t.token({ workspace: 'ws-other' }));
    expect((await other.GET('/api/build/agents')).data!.data).toEqual([]);
    for (const ref of [doc.id, doc.slug]) {
      const res = await other.GET('/api/build/agents/{ref}', { params: { path: { ref } } });
      expect(res.response.status).toBe(404);
    }
  });
});

describe('replace agent', () => {
  async function replace(ref: string, ifMatch: string | undefined, body: unknown, query: { force?: 'true' } = {}) {
    return t.client().PUT('/api/build/agents/{ref}', {
      params: { path: { ref }, header: (ifMatch === undefined ? {} : { 'If-Match': ifMatch }) as never, query },
      body: body as never,
    });
  }

  test('with the current stamp: 200, new ETag, version + 1, changes, stored', async () => {
    const { doc, etag } = await create('Replace me');
    const res = await replace(doc.slug, etag, { ...replaceBody(doc), name: 'Replaced' });
    expect(res.response.status).toBe(200);
    const result = res.data!.data;
    expect(result.version).toBe(2);
    expect(result.changes).toEqual(['name changed']);
    expect(result.document.name).toBe('Replaced');
    expect(parseStampMicros(result.document.updated_at)!).toBeGreaterThan(parseStampMicros(doc.updated_at)!);
    expect(res.response.headers.get('etag')).toBe(`"${result.document.updated_at}"`);
    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } });
    expect(read.data!.data).toEqual(result.document);
  });

  test('without If-Match: 428, nothing written', async () => {
    const { doc } = await create('No if-match');
    const res = await replace(doc.slug, undefined, replaceBody(doc));
    expect(res.response.status).toBe(428);
    expect(res.error).toEqual({ error: expect.stringMatching(/^If-Match: required/) });
    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } });
    expect(read.data!.data.updated_at).toBe(doc.updated_at);
  });

  test('a stale If-Match: 409 with the current document and applied [], nothing written', async () => {
    const { doc, etag } = await create('Stale');
    const first = await replace(doc.slug, etag, { ...replaceBody(doc), name: 'First' });
    expect(first.response.status).toBe(200);
    const res = await replace(doc.slug, etag, { ...replaceBody(first.data!.data.document), name: 'Second' });
    expect(res.response.status).toBe(409);
    expect(res.error).toMatchObject({ current: first.data!.data.document, applied: [] });
    expect((res.error as { error: string }).error).toMatch(/^If-Match: .* is not the current stamp/);
    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } });
    expect(read.data!.data).toEqual(first.data!.data.document);
  });

  test('a stale body updated_at: 409 even with If-Match *', async () => {
    const { doc } = await create('Stale body');
    const res = await replace(doc.slug, '*', { ...replaceBody(doc), updated_at: '2020-01-01T00:00:00.000000Z' });
    expect(res.response.status).toBe(409);
    expect((res.error as { error: string }).error).toMatch(/^body\.updated_at: .* is not the current stamp/);
    expect((res.error as { current: unknown }).current).toEqual(doc);
    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } });
    expect(read.data!.data).toEqual(doc);
  });

  test('If-Match * with the current body stamp is accepted', async () => {
    const { doc } = await create('Star');
    const res = await replace(doc.slug, '*', replaceBody(doc));
    expect(res.response.status).toBe(200);
    expect(res.data!.data.changes).toEqual(['no changes']);
  });

  test('a body stamp with a numeric offset naming the same instant matches', async () => {
    const { doc, etag } = await create('Offset');
    const micros = parseStampMicros(doc.updated_at)!;
    const shifted = new Date(Math.floor(micros / 1000) + 2 * 3600_000).toISOString().slice(0, 19);
    const fraction = doc.updated_at.slice(19, 26);
    const res = await replace(doc.slug, etag, { ...replaceBody(doc), updated_at: `${shifted}${fraction}+02:00` });
    expect(res.response.status).toBe(200);
  });

  test('updated_at missing from the body is 400', async () => {
    const { doc, etag } = await create('Missing stamp');
    const { updated_at: _omit, ...body } = replaceBody(doc);
    const res = await replace(doc.slug, etag, body);
    expect(res.response.status).toBe(400);
    expect(res.error).toEqual({ error: 'body.updated_at: required' });
  });

  test('a body id or slug that is not the stored one is 400, whichever the URL named', async () => {
    const a = await create('Body id A');
    const b = await create('Body id B');
    for (const ref of [a.doc.id, a.doc.slug]) {
      const wrongId = await replace(ref, a.etag, { ...replaceBody(a.doc), id: b.doc.id });
      expect(wrongId.response.status).toBe(400);
      expect((wrongId.error as { error: string }).error).toMatch(/^body\.id: /);
      const wrongSlug = await replace(ref, a.etag, { ...replaceBody(a.doc), slug: b.doc.slug });
      expect(wrongSlug.response.status).toBe(400);
      expect((wrongSlug.error as { error: string }).error).toMatch(/^body\.slug: .* a slug cannot change/);
    }
    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: a.doc.id } } });
    expect(read.data!.data).toEqual(a.doc);
  });

  test('triggers keep their ids across replaces; a kind change is 400', async () => {
    const { doc, etag } = await create('Triggers', { triggers: [{ kind: 'webhook', name: 'Hook' }] });
    const hook = doc.triggers[0]!;
    const added = await replace(doc.slug, etag, {
      ...replaceBody(doc),
      triggers: [...doc.triggers, { kind: 'poll', name: 'Poll', tool: 'kv.list', cron: '0 * * * *', timezone: 'UTC' }],
    });
    expect(added.response.status).toBe(200);
    const triggers = added.data!.data.document.triggers;
    expect(triggers[0]!.id).toBe(hook.id);
    expect(added.data!.data.changes).toEqual(["trigger 'Poll' added"]);

    const kindChange = await replace(doc.slug, added.response.headers.get('etag')!, {
      ...replaceBody(added.data!.data.document),
      triggers: [{ kind: 'poll', id: hook.id, name: 'Hook', tool: 'kv.list', cron: '0 * * * *', timezone: 'UTC' }],
    });
    expect(kindChange.response.status).toBe(400);
    expect((kindChange.error as { error: string }).error).toContain("a trigger's kind cannot change");
  });

  test('stamps strictly increase and version counts writes over rapid successive writes', async () => {
    let { doc, etag } = await create('Rapid');
    const stamps = [parseStampMicros(doc.updated_at)!];
    for (let i = 0; i < 25; i++) {
      const res = await replace(doc.slug, etag, { ...replaceBody(doc), instructions: `v${i}` });
      expect(res.response.status).toBe(200);
      expect(res.data!.data.version).toBe(i + 2);
      doc = res.data!.data.document;
      etag = res.response.headers.get('etag')!;
      stamps.push(parseStampMicros(doc.updated_at)!);
    }
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]!).toBeGreaterThan(stamps[i - 1]!);
  });

  test('concurrent replaces with one stamp: exactly one wins, the rest are 409', async () => {
    const { doc, etag } = await create('Race');
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => replace(doc.slug, etag, { ...replaceBody(doc), instructions: `writer ${i}` })));
    const winners = results.filter((r) => r.response.status === 200);
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.response.status === 409)).toHaveLength(19);
    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } });
    expect(read.data!.data).toEqual(winners[0]!.data!.data.document);
  });

  test('replacing an agent of another workspace is 404', async () => {
    const { doc, etag } = await create('Isolated');
    const other = t.client(t.token({ workspace: 'ws-other' }));
    const res = await other.PUT('/api/build/agents/{ref}', {
      params: { path: { ref: doc.id }, header: { 'If-Match': etag } },
      body: replaceBody(doc),
    });
    expect(res.response.status).toBe(404);
  });
});

describe('agent status', () => {
  test('moves the agent between draft, active and archived under If-Match', async () => {
    const { doc, etag } = await create('Status');
    const res = await t.client().POST('/api/build/agents/{ref}/status', {
      params: { path: { ref: doc.slug }, header: { 'If-Match': etag } },
      body: { status: 'archived' },
    });
    expect(res.response.status).toBe(200);
    expect(res.data!.data.document.status).toBe('archived');
    expect(res.data!.data.version).toBe(2);
    expect(res.data!.data.changes).toEqual(['status changed from draft to archived']);
    const list = await t.client().GET('/api/build/agents');
    expect(list.data!.data.find((a) => a.id === doc.id)!.status).toBe('archived');

    const stale = await t.client().POST('/api/build/agents/{ref}/status', {
      params: { path: { ref: doc.slug }, header: { 'If-Match': etag } },
      body: { status: 'active' },
    });
    expect(stale.response.status).toBe(409);
  });
});

describe('validate agent', () => {
  test('returns the normalised document and what normalisation did; writes nothing', async () => {
    const before = await t.client().GET('/api/build/agents');
    const body = {
      ...minimalAgent('Validate only'),
      status: 'active' as const,
      triggers: [{ kind: 'webhook' as const, name: 'Hook', secret_prefix: 'whk_x' }],
    };
    const res = await t.client().POST('/api/build/agents/validate', { body });
    expect(res.response.status).toBe(200);
    expect(res.data!.data.valid).toBe(true);
    expect(res.data!.data.document).not.toHaveProperty('status');
    expect(res.data!.data.document.triggers).toEqual([{ kind: 'webhook', name: 'Hook', prompt: null, enabled: true, signing: 'none' }]);
    expect(res.data!.data.changes).toEqual([
      'status ignored: it is read-only (use POST /api/build/agents/{ref}/status)',
      "reasoning_effort defaulted to null (the model's default)",
      'triggers[0].prompt defaulted to null',
      'triggers[0].enabled defaulted to true',
      'triggers[0].secret_prefix ignored: it is read-only',
      'triggers[0].signing defaulted to none',
    ]);
    expect((await t.client().GET('/api/build/agents')).data!.data).toEqual(before.data!.data);
  });
});

describe('workspace limits', () => {
  test('creating past the agent limit is 409', async () => {
    const small = await startService({}, (config) => {
      config.limits.agents = 2;
    });
    try {
      const client = small.client();
      for (const name of ['One', 'Two']) expect((await client.PUT('/api/build/agents', { body: minimalAgent(name) })).response.status).toBe(201);
      const res = await client.PUT('/api/build/agents', { body: minimalAgent('Three') });
      expect(res.response.status).toBe(409);
      expect(res.error).toEqual({ error: 'this workspace has reached its limit of 2 agents' });
      expect((await client.GET('/api/build/agents')).data!.data).toHaveLength(2);
    } finally {
      await small.close();
    }
  });
});
