import { startService, type TestService } from '../helpers/service';
import { minimalAgent, workflowCreate } from '../helpers/fixtures';
import type { components } from '../../generated/api';

type Workflow = components['schemas']['Workflow'];
let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

const minimal = (slug: string) => ({
  kind: 'service.workflow/v1' as const,
  slug,
  name: `Workflow ${slug}`,
  steps: [{ id: 'only', kind: 'tool' as const, tool: 'core.echo' }],
});

async function create(body: components['schemas']['WorkflowCreate']) {
  const res = await t.client().PUT('/api/build/workflows', { body });
  expect(res.response.status).toBe(201);
  return { doc: res.data!.data.document, etag: res.response.headers.get('etag')!, result: res.data!.data };
}

function replace(ref: string, ifMatch: string | undefined, body: unknown) {
  return t.client().PUT('/api/build/workflows/{ref}', {
    params: { path: { ref }, header: (ifMatch === undefined ? {} : { 'If-Match': ifMatch }) as never },
    body: body as never,
  });
}

describe('create workflow', () => {
  test('fills every default and returns 201 with ETag and Location', async () => {
    const { doc, etag, result } = await create(minimal('defaults'));
    expect(doc).toEqual({
      kind: 'service.workflow/v1',
      slug: 'defaults',
      name: 'Workflow defaults',
      description: null,
      enabled: true,
      updated_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
      space: { team: null },
      send_as: null,
      inputs: {},
      schedule: null,
      steps: [{ id: 'only', kind: 'tool', tool: 'core.echo', args: {}, after: [] }],
      output: null,
    });
    expect(etag).toBe(`"${doc.updated_at}"`);
    expect(result.version).toBe(1);
    expect(result.changes).toEqual(["workflow 'defaults' created"]);
    const read = await t.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: 'defaults' } } });
    expect(read.data!.data).toEqual(doc);
    expect(read.response.headers.get('etag')).toBe(etag);
  });

  test('the example document round-trips with agent and tool steps', async () => {
    expect((await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Support triage') } })).response.status).toBe(201);
    const { doc } = await create(
      workflowCreate({
        slug: 'with-agent-step',
        output: '{{steps.store.output}}',
        steps: [
          { id: 'ask', kind: 'agent', agent: 'support-triage', prompt: 'Summarise {{inputs.topic}}' },
          { id: 'store', kind: 'tool', tool: 'kv.set', args: { key: 'summary', value: '{{steps.ask.output}}' }, after: ['ask'] },
        ],
      }),
    );
    expect(doc.steps).toEqual([
      { id: 'ask', kind: 'agent', agent: 'support-triage', prompt: 'Summarise {{inputs.topic}}', after: [] },
      { id: 'store', kind: 'tool', tool: 'kv.set', args: { key: 'summary', value: '{{steps.ask.output}}' }, after: ['ask'] },
    ]);
  });

  test('a taken slug is 409', async () => {
    await create(minimal('dup'));
    const res = await t.client().PUT('/api/build/workflows', { body: minimal('dup') });
    expect(res.response.status).toBe(409);
    expect(res.error).toEqual({ error: "body.slug: 'dup' is taken in this workspace; choose another slug" });
  });

  test('schema and input-name violations are 400 naming the path', async () => {
    const tooMany = { ...minimal('too-many'), steps: Array.from({ length: 11 }, (_, i) => ({ id: `s${i}`, kind: 'tool', tool: 'core.echo' })) };
    const a = await t.client().PUT('/api/build/workflows', { body: tooMany as never });
    expect(a.response.status).toBe(400);
    expect(a.error).toEqual({ error: 'body.steps: must have at most 10 items' });

    const badSlug = await t.client().PUT('/api/build/workflows', { body: { ...minimal('x'), slug: 'Bad_Slug' } });
    expect(badSlug.error).toEqual({ error: 'body.slug: must be lowercase letters and digits in groups joined by single hyphens' });

    const badInput = await t.client().PUT('/api/build/workflows', { body: { ...minimal('inputs'), inputs: { 'Not-OK': {} } } });
    expect(badInput.response.status).toBe(400);
    expect(badInput.error).toEqual({ error: 'body.inputs.Not-OK: input names are 1..40 characters of lowercase letters, digits and underscores' });

    const badStep = await t.client().PUT('/api/build/workflows', { body: { ...minimal('steps'), steps: [{ id: 'a', kind: 'shell', tool: 'x' }] } as never });
    expect(badStep.error).toEqual({ error: 'body.steps[0].kind: must be one of tool, agent' });

    const schedule = await t.client().PUT('/api/build/workflows', { body: { ...minimal('sched'), schedule: { cron: '* * * * *' } } as never });
    expect(schedule.error).toEqual({ error: 'body.schedule.timezone: required' });
    const list = await t.client().GET('/api/build/workflows');
    expect(list.data!.data.map((w) => w.slug)).not.toEqual(expect.arrayContaining(['too-many', 'inputs', 'steps', 'sched']));
  });
});

describe('replace workflow', () => {
  test('with the current stamp: 200, version 2, changes by step', async () => {
    const { doc, etag } = await create(minimal('replace-me'));
    const body: Workflow = { ...doc, name: 'Renamed', steps: [...doc.steps, { id: 'second', kind: 'tool', tool: 'time.now', args: {}, after: ['only'] }] };
    const res = await replace('replace-me', etag, body);
    expect(res.response.status).toBe(200);
    expect(res.data!.data.version).toBe(2);
    expect(res.data!.data.changes).toEqual(['name changed', "step 'second' added"]);
    expect(res.response.headers.get('etag')).toBe(`"${res.data!.data.document.updated_at}"`);
    const list = await t.client().GET('/api/build/workflows');
    expect(list.data!.data.find((w) => w.slug === 'replace-me')).toEqual({
      slug: 'replace-me',
      name: 'Renamed',
      enabled: true,
      version: 2,
      updated_at: res.data!.data.document.updated_at,
      space: { team: null },
    });
  });

  test('428 without If-Match, 409 with a stale one, 400 for a slug change; nothing written', async () => {
    const { doc, etag } = await create(minimal('guarded'));
    expect((await replace('guarded', undefined, doc)).response.status).toBe(428);
    const stale = await replace('guarded', '"2020-01-01T00:00:00.000000Z"', doc);
    expect(stale.response.status).toBe(409);
    expect(stale.error).toMatchObject({ current: doc, applied: [] });
    const slugChange = await replace('guarded', etag, { ...doc, slug: 'moved' });
    expect(slugChange.response.status).toBe(400);
    expect(slugChange.error).toEqual({ error: "body.slug: 'moved' differs from the stored slug 'guarded'; a workflow's slug cannot change" });
    const read = await t.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: 'guarded' } } });
    expect(read.data!.data).toEqual(doc);
  });

  test('workflow stamps accept the Z form only', async () => {
    const { doc, etag } = await create(minimal('zulu'));
    const res = await replace('zulu', etag, { ...doc, updated_at: doc.updated_at.replace('Z', '+00:00') });
    expect(res.response.status).toBe(400);
    expect(res.error).toEqual({ error: 'body.updated_at: must be a UTC date-time ending in Z' });
  });
});

describe('delete workflow', () => {
  test('200 with data null; then 404, and the slug is free again', async () => {
    await create(minimal('short-lived'));
    const del = await t.client().DELETE('/api/build/workflows/{ref}', { params: { path: { ref: 'short-lived' } } });
    expect(del.response.status).toBe(200);
    expect(del.data).toEqual({ data: null });
    const again = await t.client().DELETE('/api/build/workflows/{ref}', { params: { path: { ref: 'short-lived' } } });
    expect(again.response.status).toBe(404);
    expect((await t.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: 'short-lived' } } })).response.status).toBe(404);
    await create(minimal('short-lived'));
  });

  test('another workspace cannot delete or read it', async () => {
    await create(minimal('mine'));
    const other = t.client(t.token({ workspace: 'elsewhere' }));
    expect((await other.DELETE('/api/build/workflows/{ref}', { params: { path: { ref: 'mine' } } })).response.status).toBe(404);
    expect((await other.GET('/api/build/workflows')).data!.data).toEqual([]);
    expect((await t.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: 'mine' } } })).response.status).toBe(200);
  });
});

describe('validate workflow', () => {
  test('returns the normalised document and each default it filled; writes nothing', async () => {
    const res = await t.client().POST('/api/build/workflows/validate', { body: minimal('validate-only') });
    expect(res.response.status).toBe(200);
    expect(res.data!.data.valid).toBe(true);
    expect(res.data!.data.changes).toEqual([
      'description defaulted to null',
      'enabled defaulted to true',
      'space defaulted to { team: null }',
      'send_as defaulted to null',
      'inputs defaulted to {}',
      'schedule defaulted to null',
      'steps[0].args defaulted to {}',
      'steps[0].after defaulted to []',
      'output defaulted to null',
    ]);
    expect((await t.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: 'validate-only' } } })).response.status).toBe(404);
  });
});

describe('workspace limits', () => {
  test('creating past the workflow limit is 409 and writes nothing', async () => {
    const small = await startService({}, (config) => {
      config.limits.workflows = 1;
    });
    try {
      expect((await small.client().PUT('/api/build/workflows', { body: minimal('first') })).response.status).toBe(201);
      const res = await small.client().PUT('/api/build/workflows', { body: minimal('second') });
      expect(res.response.status).toBe(409);
      expect(res.error).toEqual({ error: 'this workspace has reached its limit of 1 workflows' });
      expect((await small.client().GET('/api/build/workflows')).data!.data.map((w) => w.slug)).toEqual(['first']);
    } finally {
      await small.close();
    }
  });
});
