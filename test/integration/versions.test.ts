// Versions over HTTP: every write of an agent or a workflow is kept and can be listed (pages that
// neither repeat nor skip while writes land), read (ETag: that version's stamp), compared (an RFC
// 6902 patch another library applies exactly), restored (a replace: If-Match, webhook identity,
// force, one winner against a racing replace) and run; another workspace sees none of it.
import { applyPatch } from 'rfc6902';
import type { components } from '../../generated/api';
import { minimalAgent, replaceBody, storedPart } from '../helpers/fixtures';
import { waitForAgentRun, waitForWorkflowRun } from '../helpers/runs';
import { startService, type TestService } from '../helpers/service';
import { storedBytes, storedValue } from '../helpers/stored';

type Agent = components['schemas']['Agent'];
let t: TestService;
beforeAll(async () => {
  // Versions kept well above what a test writes, so that the runs of 100 a walk reads are held (services/version-pages.ts).
  t = await startService({ VERSIONS_KEPT: '1000' });
});
afterAll(() => t.close());

let n = 0;
/** An agent (with a webhook trigger when `hooked`), its read document and ETag. */
async function createAgent(hooked = false) {
  const res = await t
    .client()
    .PUT('/api/build/agents', { body: { ...minimalAgent(`Versioned ${++n}`), triggers: hooked ? [{ kind: 'webhook', name: 'Inbound' }] : [] } });
  expect(res.response.status).toBe(201);
  return { doc: res.data!.data.document, etag: res.response.headers.get('etag')!, urls: res.data!.data.webhook_urls ?? [] };
}

/** Replaces the agent with `change` applied to its stored document; the write's reply. */
async function replaceAgent(ref: string, change: (doc: Agent) => Partial<Agent>, force = false) {
  const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref } } });
  const doc = storedPart(read.data!.data);
  return t.client().PUT('/api/build/agents/{ref}', {
    params: { path: { ref }, header: { 'If-Match': read.response.headers.get('etag')! }, query: force ? { force: 'true' } : {} },
    body: { ...replaceBody(doc), ...change(doc) } as never,
  });
}

const versionsOf = (ref: string, query: { limit?: number; cursor?: string } = {}, token?: string) =>
  t.client(token).GET('/api/build/agents/{ref}/versions', { params: { path: { ref }, query } });
const versionOf = (ref: string, version: string) => t.client().GET('/api/build/agents/{ref}/versions/{version}', { params: { path: { ref, version } } });
const restore = (ref: string, version: string, ifMatch: string | undefined, force = false) =>
  t.client().POST('/api/build/agents/{ref}/versions/{version}/restore', {
    params: { path: { ref, version }, header: (ifMatch === undefined ? {} : { 'If-Match': ifMatch }) as never, query: force ? { force: 'true' } : {} },
  });
const etagOf = async (ref: string) => (await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref } } })).response.headers.get('etag')!;

test('each write is a version: listed newest first with its id, stamp, author and changes; read whole, by number or id', async () => {
  const { doc } = await createAgent();
  const renamed = await replaceAgent(doc.id, () => ({ name: 'Renamed' }));
  const activated = await t.client(t.token({ user: 'user-2' })).POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: doc.id }, header: { 'If-Match': renamed.response.headers.get('etag')! } },
    body: { status: 'active' },
  });
  expect(activated.data!.data.version).toBe(3);
  const listed = await versionsOf(doc.slug);
  expect(listed.response.status).toBe(200);
  expect(listed.response.headers.get('link')).toBeNull();
  expect(listed.data).toEqual({
    data: [
      {
        version: 3,
        version_id: `${doc.id}@3`,
        updated_at: activated.data!.data.document.updated_at,
        author: 'user-2',
        changes: ['status changed from draft to active'],
      },
      { version: 2, version_id: `${doc.id}@2`, updated_at: renamed.data!.data.document.updated_at, author: 'user-1', changes: ['name changed'] },
      { version: 1, version_id: `${doc.id}@1`, updated_at: doc.updated_at, author: 'user-1', changes: [`agent '${doc.slug}' created`] },
    ],
    next_cursor: null,
  });
  const first = await versionOf(doc.slug, '1');
  expect(first.response.status).toBe(200);
  expect(first.response.headers.get('etag')).toBe(`"${doc.updated_at}"`);
  expect(first.data!.data).toEqual(doc);
  expect((await versionOf(doc.id, `${doc.id.toUpperCase()}@2`)).data!.data).toEqual(renamed.data!.data.document);

  expect((await versionOf(doc.slug, '4')).response.status).toBe(404);
  const otherDoc = (await createAgent()).doc;
  const foreign = await versionOf(doc.slug, `${otherDoc.id}@1`);
  expect(foreign.response.status).toBe(404);
  expect((foreign.error as { error: string }).error).toContain('version');
  expect((await versionOf(doc.slug, 'first')).response.status).toBe(400);
  // Another workspace: the agent is not there, nor its versions.
  const elsewhere = t.token({ workspace: 'ws-elsewhere' });
  expect((await versionsOf(doc.id, {}, elsewhere)).response.status).toBe(404);
  expect(
    (await t.client(elsewhere).GET('/api/build/agents/{ref}/versions/{version}', { params: { path: { ref: doc.id, version: '1' } } })).response.status,
  ).toBe(404);
});

test('a limit outside 1..100 or not written in decimal digits is 400 naming it', async () => {
  const { doc } = await createAgent();
  for (const limit of ['0', '101', '1e1', '10.0', '0x10', 'abc']) {
    const res = await fetch(`${t.baseUrl}/api/build/agents/${doc.id}/versions?limit=${limit}`, { headers: { authorization: `Bearer ${t.token()}` } });
    expect([limit, res.status]).toEqual([limit, 400]);
    expect((await res.json()) as { error: string }).toEqual({ error: expect.stringMatching(/^query\.limit: /) });
  }
});

test('pages of versions neither repeat nor skip while writes land; Link names the next page', async () => {
  const { doc } = await createAgent();
  for (let i = 0; i < 12; i++) expect((await replaceAgent(doc.id, () => ({ description: `write ${i}` }))).response.status).toBe(200);
  const seen: number[] = [];
  let cursor: string | undefined;
  let top = 0;
  for (let page = 0; page < 100; page++) {
    const res = await versionsOf(doc.id, { limit: 4, ...(cursor && { cursor }) });
    if (page === 0) top = res.data!.data[0]!.version;
    seen.push(...res.data!.data.map((v) => v.version));
    const next = res.data!.next_cursor;
    expect(res.response.headers.get('link')).toBe(next ? `</api/build/agents/${doc.id}/versions?limit=4&cursor=${next}>; rel="next"` : null);
    // Writes land between pages: newer versions go above the first page, never into this walk.
    await replaceAgent(doc.id, () => ({ description: `during page ${page}` }));
    if (!next) break;
    cursor = next;
  }
  expect(seen).toEqual(Array.from({ length: top }, (_, i) => top - i));
  expect((await versionsOf(doc.id, { cursor: 'not-a-cursor' })).response.status).toBe(400);
});

test('a walk down more than two runs of 100 versions lists each version once, as the first walk listed it, while writes land', async () => {
  const { doc } = await createAgent();
  for (let i = 0; i < 250; i++) expect((await replaceAgent(doc.id, () => ({ description: `bulk ${i}` }))).response.status).toBe(200);
  const walk = async () => {
    const items: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const res = await versionsOf(doc.id, { limit: 9, ...(cursor && { cursor }) });
      expect(res.response.status).toBe(200);
      items.push(...res.data!.data);
      await replaceAgent(doc.id, () => ({ description: `during page ${page}` }));
      if (!res.data!.next_cursor) break;
      cursor = res.data!.next_cursor;
    }
    return items as { version: number; updated_at: string; changes: string[] }[];
  };
  const first = await walk(); // builds the runs of versions 1–200 as the pages reach them
  const top = first[0]!.version;
  expect(first.map((v) => v.version)).toEqual(Array.from({ length: top }, (_, i) => top - i));
  const again = await walk(); // starts higher (the writes of the first walk), then the same versions from the held runs
  expect(again.slice(again.length - top)).toEqual(first);
  const sample = first.find((v) => v.version === 150)!;
  const read = await versionOf(doc.id, '150');
  expect(sample.updated_at).toBe(read.data!.data.updated_at);
  expect(sample.changes).toEqual(['description changed']);
});

test('a diff is an RFC 6902 patch that another library applies to give the other version exactly', async () => {
  const { doc } = await createAgent();
  await replaceAgent(doc.id, () => ({ name: 'Two', eval_criteria: ['a/b', 'c~d', 'e', 'x', 'y'] }));
  await replaceAgent(doc.id, () => ({ description: 'Three', eval_criteria: ['e', 'y', 'x', 'z'], folder: 'a/b~c' }));
  const kept = async (v: string) => (await versionOf(doc.id, v)).data!.data;
  for (const [from, to] of [
    ['1', 'current'],
    ['2', '3'],
    ['3', '1'],
    ['2', `${doc.id}@2`],
  ] as const) {
    const res = await t.client().GET('/api/build/agents/{ref}/versions/{version}/diff', { params: { path: { ref: doc.id, version: from }, query: { to } } });
    expect(res.response.status).toBe(200);
    const toNumber = to === 'current' ? 3 : Number(to.split('@').pop());
    expect(res.data!.data).toMatchObject({ from: Number(from), to: toNumber });
    const target = await kept(String(toNumber));
    const patched = structuredClone(await kept(from));
    expect(applyPatch(patched, res.data!.data.patch as never).every((error) => error === null)).toBe(true);
    expect(patched).toEqual(target);
  }
  const unknown = await t
    .client()
    .GET('/api/build/agents/{ref}/versions/{version}/diff', { params: { path: { ref: doc.id, version: '1' }, query: { to: '9' } } });
  expect(unknown.response.status).toBe(404);
});

test('a restore writes the old content as a new version: stamp checked, status kept, webhooks keep their identity', async () => {
  const { doc, urls } = await createAgent(true);
  const hook = doc.triggers[0]!;
  await replaceAgent(doc.id, () => ({ name: 'Changed' }));
  const etag = await etagOf(doc.id);
  expect((await restore(doc.id, '1', undefined)).response.status).toBe(428);
  const stale = await restore(doc.id, '1', `"${doc.updated_at}"`);
  expect(stale.response.status).toBe(409);
  expect((stale.error as { current: Agent }).current.name).toBe('Changed');

  const restored = await restore(doc.id, '1', etag);
  expect(restored.response.status).toBe(200);
  const result = restored.data!.data;
  expect(result).toMatchObject({ version: 3, changes: ['restored from version 1', 'name changed'] });
  expect(restored.response.headers.get('etag')).toBe(`"${result.document.updated_at}"`);
  expect(result).not.toHaveProperty('webhook_urls');
  expect({ ...result.document, updated_at: doc.updated_at }).toEqual(doc);
  // The webhook's URL still opens it.
  expect((await fetch(urls[0]!.url.replace('http://build.test', t.baseUrl), { method: 'POST', body: '{}' })).status).not.toBe(404);
  expect((await versionsOf(doc.id)).data!.data[0]).toMatchObject({ version: 3, changes: ['restored from version 1', 'name changed'] });

  // Dropped since, a webhook trigger comes back as a new one, with a new one-time URL.
  const dropped = await replaceAgent(doc.id, () => ({ triggers: [] }), true);
  expect(dropped.response.status).toBe(200);
  const back = await restore(doc.id, '1', dropped.response.headers.get('etag')!);
  expect(back.response.status).toBe(200);
  const newHook = back.data!.data.document.triggers[0]!;
  expect(newHook.id).not.toBe(hook.id);
  expect(back.data!.data.webhook_urls!.map((u) => u.trigger_id)).toEqual([newHook.id]);
  expect((await fetch(urls[0]!.url.replace('http://build.test', t.baseUrl), { method: 'POST', body: '{}' })).status).toBe(410);

  // Restoring version 4 (no triggers) would drop the current webhook: refused unless force.
  const refused = await restore(doc.id, '4', back.response.headers.get('etag')!);
  expect(refused.response.status).toBe(409);
  expect((refused.error as { error: string }).error).toContain('force=true');
  const forced = await restore(doc.id, '4', back.response.headers.get('etag')!, true);
  expect(forced.response.status).toBe(200);
  expect(forced.data!.data.document.triggers).toEqual([]);
});

test('a restore racing a replace from the same stamp: one wins, one version is added', async () => {
  const { doc } = await createAgent();
  await replaceAgent(doc.id, () => ({ name: 'Second' }));
  const etag = await etagOf(doc.id);
  const read = storedPart((await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } })).data!.data);
  const [restored, replaced] = await Promise.all([
    restore(doc.id, '1', etag),
    t
      .client()
      .PUT('/api/build/agents/{ref}', { params: { path: { ref: doc.id }, header: { 'If-Match': etag } }, body: { ...replaceBody(read), name: 'Racer' } }),
  ]);
  expect([restored.response.status, replaced.response.status].sort()).toEqual([200, 409]);
  const versions = (await versionsOf(doc.id)).data!.data;
  expect(versions.map((v) => v.version)).toEqual([3, 2, 1]);
  const name = (await versionOf(doc.id, '3')).data!.data.name;
  expect(name).toBe(restored.response.status === 200 ? doc.name : 'Racer');
});

test('a test run of a kept version runs it and says which; the current version decides whether it may run', async () => {
  const { doc } = await createAgent();
  await replaceAgent(doc.id, () => ({ name: 'Now' }));
  const old = await t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: doc.id } }, body: { prompt: 'hello', version: 1 } });
  expect(old.response.status).toBe(202);
  const current = await t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: doc.id } }, body: { prompt: 'hello' } });
  const byId = await t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: doc.id } }, body: { prompt: 'hello', version: `${doc.id}@1` } });
  expect((await waitForAgentRun(t, old.data!.data.run_id)).version).toBe(1);
  expect((await waitForAgentRun(t, current.data!.data.run_id)).version).toBe(2);
  expect((await waitForAgentRun(t, byId.data!.data.run_id)).version).toBe(1);
  const listed = await t.client().GET('/api/build/runs', { params: { query: { agent: doc.id, limit: 10 } } });
  expect(listed.data!.data.find((r) => r.id === old.data!.data.run_id)!.agent).toEqual({ slug: doc.slug, name: doc.name });
  const unknown = await t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: doc.id } }, body: { prompt: 'hello', version: 7 } });
  expect(unknown.response.status).toBe(404);
  expect((unknown.error as { error: string }).error).toMatch(/^body\.version: /);
  // Archived now, the agent runs no version of itself: the current version decides.
  await t
    .client()
    .POST('/api/build/agents/{ref}/status', { params: { path: { ref: doc.id }, header: { 'If-Match': await etagOf(doc.id) } }, body: { status: 'archived' } });
  const archived = await t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: doc.id } }, body: { prompt: 'hello', version: 1 } });
  expect(archived.response.status).toBe(409);
});

test('workflows: versions kept, restored and run; deleting the workflow deletes them', async () => {
  const step = (value: string) => [{ id: 'say', kind: 'tool' as const, tool: 'core.echo', args: { value } }];
  const created = await t
    .client()
    .PUT('/api/build/workflows', { body: { kind: 'service.workflow/v1', slug: 'versioned-flow', name: 'Flow', steps: step('one') } });
  expect(created.response.status).toBe(201);
  const v1 = created.data!.data.document;
  const replaced = await t.client().PUT('/api/build/workflows/{ref}', {
    params: { path: { ref: 'versioned-flow' }, header: { 'If-Match': created.response.headers.get('etag')! } },
    body: { ...v1, steps: step('two') } as never,
  });
  expect(replaced.response.status).toBe(200);
  const listed = await t.client().GET('/api/build/workflows/{ref}/versions', { params: { path: { ref: 'versioned-flow' } } });
  expect(listed.data!.data.map((v) => [v.version, v.changes])).toEqual([
    [2, ["step 'say' changed"]],
    [1, ["workflow 'versioned-flow' created"]],
  ]);

  const run = await t.client().POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'versioned-flow' } }, body: { version: 1 } });
  const ran = await waitForWorkflowRun(t, run.data!.data.run_id);
  expect(ran).toMatchObject({
    status: 'succeeded',
    workflow_version_id: `${ran.workflow_id}@1`,
    step_results: { say: { status: 'succeeded', output: { value: 'one' } } },
  });

  const restored = await t.client().POST('/api/build/workflows/{ref}/versions/{version}/restore', {
    params: { path: { ref: 'versioned-flow', version: '1' }, header: { 'If-Match': replaced.response.headers.get('etag')! } },
  });
  expect(restored.response.status).toBe(200);
  expect(restored.data!.data).toMatchObject({ version: 3, changes: ['restored from version 1', "step 'say' changed"], document: { steps: step('one') } });

  const id = ran.workflow_id;
  expect((await t.client().DELETE('/api/build/workflows/{ref}', { params: { path: { ref: 'versioned-flow' } } })).response.status).toBe(200);
  expect((await t.client().GET('/api/build/workflows/{ref}/versions', { params: { path: { ref: id } } })).response.status).toBe(404);
  expect(Number(await storedValue(t.config, 'SELECT COUNT(*) FROM workflow_versions WHERE document_id = ?', [id]))).toBe(0);
});

test('a workflow diff through members named constructor or prototype applies with rfc6902, which refuses such paths', async () => {
  const step = (args: Record<string, unknown>) => [{ id: 'say', kind: 'tool' as const, tool: 'core.echo', args }];
  const created = await t.client().PUT('/api/build/workflows', {
    body: { kind: 'service.workflow/v1', slug: 'prototype-args', name: 'Flow', steps: step({ constructor: { x: 1 }, prototype: [1], value: 'a' }) },
  });
  expect(created.response.status).toBe(201);
  const replaced = await t.client().PUT('/api/build/workflows/{ref}', {
    params: { path: { ref: 'prototype-args' }, header: { 'If-Match': created.response.headers.get('etag')! } },
    body: { ...created.data!.data.document, name: 'Flow 2', steps: step({ constructor: { x: 2 }, value: 'b' }) } as never,
  });
  expect(replaced.response.status).toBe(200);
  const kept = async (v: string) =>
    (await t.client().GET('/api/build/workflows/{ref}/versions/{version}', { params: { path: { ref: 'prototype-args', version: v } } })).data!.data;
  for (const [from, to] of [
    ['1', '2'],
    ['2', '1'],
  ] as const) {
    const res = await t
      .client()
      .GET('/api/build/workflows/{ref}/versions/{version}/diff', { params: { path: { ref: 'prototype-args', version: from }, query: { to } } });
    expect(res.response.status).toBe(200);
    const patched = structuredClone(await kept(from));
    // Parsed again here: rfc6902 tells an array by its constructor, and the client's JSON was parsed in another realm than jest's.
    const patch = JSON.parse(JSON.stringify(res.data!.data.patch)) as unknown[];
    expect(applyPatch(patched, patch as never)).toEqual(patch.map(() => null));
    expect(patched).toEqual(await kept(to));
  }
});

test('no version holds a webhook secret, a signing secret or a secret’s hash', async () => {
  const res = await t
    .client()
    .PUT('/api/build/agents', { body: { ...minimalAgent('Secretive'), triggers: [{ kind: 'webhook', name: 'Signed', signing: 'standard-webhooks' }] } });
  const { webhook_urls: urls, document } = res.data!.data;
  const secret = urls![0]!.url.split('/').pop()!;
  const signing = urls![0]!.signing_secret!;
  await replaceAgent(document.id, () => ({ name: 'Secretive 2' }));
  const versions = await Promise.all(['1', '2'].map(async (v) => JSON.stringify((await versionOf(document.id, v)).data)));
  for (const text of versions) for (const hidden of [secret, signing]) expect(text).not.toContain(hidden);
  const stored = await storedBytes(t.config);
  for (const hidden of [secret, signing]) expect(stored.includes(Buffer.from(hidden))).toBe(false);
  for (const text of versions) expect(text).not.toMatch(/secret_hash|signing_secret/);
});
