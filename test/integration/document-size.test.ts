// document_bytes limits the document as it is stored: with its id, slug, status, stamp, trigger
// ids and secret prefixes, which the request does not carry. Measured exactly: a limit equal to the
// stored size accepts the document, one byte less refuses it, and nothing is written.
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';

jest.setTimeout(20_000); // each test starts services of its own (about a second each)

const agent = () => ({
  ...minimalAgent('Size probe'),
  triggers: Array.from({ length: 10 }, (_, i) => ({ kind: 'webhook' as const, name: `Hook ${i}` })),
});
const workflow = () => ({
  kind: 'service.workflow/v1' as const,
  slug: 'size-probe',
  name: 'Size probe',
  steps: Array.from({ length: 10 }, (_, i) => ({ id: `s${i}`, kind: 'tool' as const, tool: 'core.echo' })),
});

async function withLimit<T>(limit: number, fn: (t: TestService) => Promise<T>): Promise<T> {
  const t = await startService({}, (config) => {
    config.limits.document_bytes = limit;
  });
  try {
    return await fn(t);
  } finally {
    await t.close();
  }
}

/** The stored document's size, read back from a service without a tight limit. */
async function storedSizes() {
  return withLimit(65536, async (t) => {
    const a = await t.client().PUT('/api/build/agents', { body: agent() });
    const w = await t.client().PUT('/api/build/workflows', { body: workflow() });
    return { agent: Buffer.byteLength(JSON.stringify(a.data!.data.document)), workflow: Buffer.byteLength(JSON.stringify(w.data!.data.document)) };
  });
}

test('an agent: the limit counts ids, prefixes, slug, status and stamp; at the stored size it fits, one byte less it is refused by validate and create', async () => {
  const sizes = await storedSizes();
  expect(sizes.agent - Buffer.byteLength(JSON.stringify(agent()))).toBeGreaterThan(600); // what the request did not carry
  await withLimit(sizes.agent, async (t) => {
    expect((await t.client().POST('/api/build/agents/validate', { body: agent() })).response.status).toBe(200);
    expect((await t.client().PUT('/api/build/agents', { body: agent() })).response.status).toBe(201);
  });
  await withLimit(sizes.agent - 1, async (t) => {
    const message = { error: `body: the document as stored is ${sizes.agent} bytes; the workspace limit is ${sizes.agent - 1}` };
    const validate = await t.client().POST('/api/build/agents/validate', { body: agent() });
    expect([validate.response.status, validate.error]).toEqual([400, message]);
    const create = await t.client().PUT('/api/build/agents', { body: agent() });
    expect([create.response.status, create.error]).toEqual([400, message]);
    expect((await t.client().GET('/api/build/agents')).data!.data).toEqual([]);
  });
});

test('a derived slug that grows the document past the limit is refused at the write (the second "Size probe" is size-probe-2)', async () => {
  const sizes = await storedSizes();
  await withLimit(sizes.agent, async (t) => {
    expect((await t.client().PUT('/api/build/agents', { body: agent() })).response.status).toBe(201);
    const second = await t.client().PUT('/api/build/agents', { body: agent() });
    expect([second.response.status, second.error]).toEqual([
      400,
      { error: `body: the document as stored is ${sizes.agent + 2} bytes; the workspace limit is ${sizes.agent}` },
    ]);
    expect((await t.client().GET('/api/build/agents')).data!.data).toHaveLength(1);
  });
});

test('a workflow: its defaults and stamp count; at the stored size it fits, one byte less it is refused', async () => {
  const sizes = await storedSizes();
  expect(sizes.workflow).toBeGreaterThan(Buffer.byteLength(JSON.stringify(workflow())));
  await withLimit(sizes.workflow, async (t) => {
    expect((await t.client().PUT('/api/build/workflows', { body: workflow() })).response.status).toBe(201);
  });
  await withLimit(sizes.workflow - 1, async (t) => {
    const create = await t.client().PUT('/api/build/workflows', { body: workflow() });
    expect([create.response.status, create.error]).toEqual([
      400,
      { error: `body: the document as stored is ${sizes.workflow} bytes; the workspace limit is ${sizes.workflow - 1}` },
    ]);
  });
});
