// Workspace skills over HTTP (docs/skills.md): create, read, list, replace with If-Match, delete;
// the format's rules with the path of each problem; import of a SKILL.md; versions; the agents'
// workspace_skills check and the delete it blocks; another workspace sees none of it. Every reply
// is checked against openapi.yaml by the service (validateResponses).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { applyPatch } from 'rfc6902';
import type { components } from '../../generated/api';
import { minimalAgent } from '../helpers/fixtures';
import { startService, type TestService } from '../helpers/service';

type SkillCreate = components['schemas']['SkillCreate'];
let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

const skill = (name: string, overrides: Partial<SkillCreate> = {}): SkillCreate => ({
  kind: 'service.skill/v1',
  name,
  description: `The ${name} skill.`,
  body: `# ${name}\n\nDo the thing.\n`,
  ...overrides,
});

async function create(body: SkillCreate) {
  const res = await t.client().PUT('/api/build/skills', { body });
  expect(res.response.status).toBe(201);
  return { doc: res.data!.data.document, etag: res.response.headers.get('etag')!, result: res.data!.data };
}

/** A request with any body and media type (the typed client sends JSON only). */
function send(method: string, path: string, body?: string, headers: Record<string, string> = {}, token = t.token()) {
  return fetch(`${t.baseUrl}${path}`, { method, body, headers: { authorization: `Bearer ${token}`, ...headers } });
}

const replace = (name: string, ifMatch: string | undefined, body: unknown) =>
  t.client().PUT('/api/build/skills/{name}', {
    params: { path: { name }, header: (ifMatch === undefined ? {} : { 'If-Match': ifMatch }) as never },
    body: body as never,
  });

const SKILL_MD = `---
name: release-notes
description: Write release notes from a list of merged changes.
license: MIT
compatibility: Needs git.
metadata:
  author: acme-docs
  version: "1.2"
allowed-tools: Bash(git log:*)
---
# Release notes

Group the changes by area, newest first.
`;

const importSkill = (text: string, type = 'text/markdown') => send('POST', '/api/build/skills/import', text, { 'content-type': type });

describe('create, read, list, replace, delete', () => {
  test('create fills every member, answers 201 with ETag and Location, and reads back', async () => {
    const { doc, etag, result } = await create(skill('pdf-forms', { files: [{ path: 'reference/fields.md', content: '# Fields\n' }], metadata: { a: 'b' } }));
    expect(doc).toEqual({
      kind: 'service.skill/v1',
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'pdf-forms',
      version: 1,
      updated_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
      description: 'The pdf-forms skill.',
      license: null,
      compatibility: null,
      metadata: { a: 'b' },
      body: '# pdf-forms\n\nDo the thing.\n',
      files: [{ path: 'reference/fields.md', content: '# Fields\n' }],
    });
    expect(etag).toBe(`"${doc.updated_at}"`);
    expect(result).toMatchObject({ version: 1, applied: ['document'], changes: ["skill 'pdf-forms' created"] });
    const read = await t.client().GET('/api/build/skills/{name}', { params: { path: { name: 'pdf-forms' } } });
    expect(read.data!.data).toEqual(doc);
    expect(read.response.headers.get('etag')).toBe(etag);
    const again = await send('GET', '/api/build/skills/pdf-forms', undefined, { 'if-none-match': etag });
    expect(again.status).toBe(304);
  });

  test('a taken name is 409 and nothing is written', async () => {
    await create(skill('taken'));
    const res = await t.client().PUT('/api/build/skills', { body: skill('taken', { description: 'other' }) });
    expect(res.response.status).toBe(409);
    expect(res.error).toEqual({ error: "body.name: 'taken' is taken in this workspace; choose another name" });
    expect((await t.client().GET('/api/build/skills/{name}', { params: { path: { name: 'taken' } } })).data!.data.description).toBe('The taken skill.');
  });

  test('the list shows name, description, version and stamp by name, and pages with a cursor', async () => {
    const token = t.token({ workspace: 'ws-list' });
    for (const name of ['c-skill', 'a-skill', 'b-skill']) {
      expect((await t.client(token).PUT('/api/build/skills', { body: skill(name) })).response.status).toBe(201);
    }
    const whole = await t.client(token).GET('/api/build/skills');
    expect(whole.data!.data.map((s) => s.name)).toEqual(['a-skill', 'b-skill', 'c-skill']);
    expect(whole.data!.data[0]).toEqual({ name: 'a-skill', description: 'The a-skill skill.', version: 1, updated_at: expect.any(String) });
    expect(whole.data!.next_cursor).toBeNull();
    const first = await t.client(token).GET('/api/build/skills', { params: { query: { limit: 2 } } });
    expect(first.data!.data.map((s) => s.name)).toEqual(['a-skill', 'b-skill']);
    expect(first.response.headers.get('link')).toContain('rel="next"');
    const second = await t.client(token).GET('/api/build/skills', { params: { query: { limit: 2, cursor: first.data!.next_cursor! } } });
    expect(second.data).toEqual({ data: [expect.objectContaining({ name: 'c-skill' })], next_cursor: null });
  });

  test('replace needs If-Match (428), a current stamp (409 with current), and the same name (400 body.name)', async () => {
    const { doc, etag } = await create(skill('replaced'));
    const body = { ...doc, description: 'Now better.' };
    expect((await replace('replaced', undefined, body)).response.status).toBe(428);
    const stale = await replace('replaced', '"2020-01-01T00:00:00.000000Z"', body);
    expect(stale.response.status).toBe(409);
    expect(stale.error).toMatchObject({ current: doc, applied: [] });
    const renamed = await replace('replaced', etag, { ...body, name: 'other-name' });
    expect(renamed.response.status).toBe(400);
    expect(renamed.error!.error).toMatch(/^body\.name: 'other-name' differs from the skill's name 'replaced'/);
    const ok = await replace('replaced', etag, body);
    expect(ok.response.status).toBe(200);
    expect(ok.data!.data).toMatchObject({ version: 2, changes: ['description changed'], document: { version: 2, description: 'Now better.' } });
    expect(ok.response.headers.get('etag')).toBe(`"${ok.data!.data.document.updated_at}"`);
  });

  test('delete removes the skill and its versions', async () => {
    await create(skill('gone'));
    const res = await t.client().DELETE('/api/build/skills/{name}', { params: { path: { name: 'gone' } } });
    expect(res.data).toEqual({ data: null });
    expect((await t.client().GET('/api/build/skills/{name}', { params: { path: { name: 'gone' } } })).response.status).toBe(404);
    expect((await send('GET', '/api/build/skills/gone/versions')).status).toBe(404);
  });
});

describe("the format's rules, each named by its path", () => {
  const refused = async (body: unknown, pattern: RegExp) => {
    const res = await t.client().PUT('/api/build/skills', { body: body as never });
    expect(res.response.status).toBe(400);
    expect(res.error!.error).toMatch(pattern);
  };

  test.each([
    ['Upper', /^body\.name: /],
    ['-lead', /^body\.name: /],
    ['trail-', /^body\.name: /],
    ['two--hyphens', /^body\.name: /],
    ['a'.repeat(65), /^body\.name: /],
    ['7a0e6c55-3f1d-4b8e-9c2a-5d4e3f2a1b0c', /^body\.name: .*form of a UUID/],
  ])('name %s', (name, pattern) => refused(skill(name), pattern));

  test('description blank, and too long', async () => {
    await refused(skill('blank', { description: '   ' }), /^body\.description: /);
    await refused(skill('long', { description: 'x'.repeat(1025) }), /^body\.description: /);
  });

  test.each([
    ['../x', /^body\.files\[0\]\.path: '..\/x' must not have a \. or \.\. segment/],
    ['/abs', /^body\.files\[0\]\.path: /],
    ['a//b', /^body\.files\[0\]\.path: /],
    ['a/./b', /^body\.files\[0\]\.path: .*\. or \.\. segment/],
    ['SKILL.md', /^body\.files\[0\]\.path: 'SKILL\.md' is the skill itself/],
  ])('file path %s', (path, pattern) => refused(skill('paths', { files: [{ path, content: 'x' }] }), pattern));

  test('duplicate paths, too many files, oversize body and file, metadata rules', async () => {
    await refused(
      skill('dup', {
        files: [
          { path: 'a.md', content: '' },
          { path: 'a.md', content: '' },
        ],
      }),
      /^body\.files\[1\]\.path: 'a\.md' names another file/,
    );
    const files = Array.from({ length: 21 }, (_, i) => ({ path: `f${i}.md`, content: '' }));
    await refused(skill('many', { files }), /^body\.files: /);
    // 65,537 bytes of UTF-8 in fewer characters than the schema's maxLength counts.
    await refused(skill('big', { body: 'é'.repeat(32_769) }), /^body\.body: is 65538 bytes of UTF-8; at most 65536/);
    await refused(skill('big-file', { files: [{ path: 'x.md', content: 'é'.repeat(32_769) }] }), /^body\.files\[0\]\.content: is 65538 bytes/);
    await refused(skill('meta', { metadata: { ['k'.repeat(65)]: 'v' } }), /^body\.metadata\["k+"\]: a key must be 1 to 64 characters/);
    const entries = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']));
    await refused(skill('meta-many', { metadata: entries }), /^body\.metadata: /);
    await refused(skill('lic', { license: 'x'.repeat(201) }), /^body\.license: /);
    await refused(skill('compat', { compatibility: 'x'.repeat(501) }), /^body\.compatibility: /);
  });

  test('the whole skill stored is at most 512 KiB; a request may be larger than 64 KiB', async () => {
    const files = Array.from({ length: 8 }, (_, i) => ({ path: `part-${i}.md`, content: 'x'.repeat(65_000) }));
    const big = await t.client().PUT('/api/build/skills', { body: skill('large-ok', { files }) });
    expect(big.response.status).toBe(201);
    const tooBig = Array.from({ length: 9 }, (_, i) => ({ path: `part-${i}.md`, content: 'x'.repeat(65_000) }));
    await refused(skill('too-large', { files: tooBig }), /^body: the skill as stored is \d+ bytes; at most 524288/);
  });
});

describe('import of a SKILL.md', () => {
  test('front matter and instructions become the skill; allowed-tools is ignored', async () => {
    const res = await importSkill(SKILL_MD);
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe('/api/build/skills/release-notes');
    const { data } = (await res.json()) as { data: components['schemas']['SkillWriteResult'] };
    expect(data.document).toMatchObject({
      name: 'release-notes',
      description: 'Write release notes from a list of merged changes.',
      license: 'MIT',
      compatibility: 'Needs git.',
      metadata: { author: 'acme-docs', version: '1.2' },
      body: '# Release notes\n\nGroup the changes by area, newest first.\n',
      files: [],
      version: 1,
    });
    // text/plain too; the name is taken now.
    const again = await importSkill(SKILL_MD, 'text/plain; charset=utf-8');
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ error: "front matter.name: 'release-notes' is taken in this workspace; choose another name" });
  });

  test.each([
    ['no front matter', '# Just markdown\n', /^body: a SKILL\.md starts with front matter/],
    ['no closing line', '---\nname: x\n# body\n', /^body: the front matter has no closing --- line/],
    ['bad YAML', '---\nname: [unclosed\n---\nbody\n', /^front matter: is not valid YAML/],
    ['not a mapping', '---\n- a\n---\nbody\n', /^front matter: must be a YAML mapping/],
    ['unknown member', '---\nname: x\ndescription: y\nversion: 2\n---\nbody\n', /^front matter\.version: is not a member/],
    ['bad name', '---\nname: Bad_Name\ndescription: y\n---\nbody\n', /^front matter\.name: /],
    ['number metadata', '---\nname: num\ndescription: y\nmetadata:\n  n: 3\n---\nb\n', /^front matter\.metadata\["n"\]: must be a string/],
    ['nested metadata', '---\nname: nest\ndescription: y\nmetadata:\n  n: [1]\n---\nb\n', /^front matter\.metadata\["n"\]: must be a string/],
    ['missing description', '---\nname: nodesc\n---\nb\n', /^front matter\.description: required/],
  ])('%s is 400', async (_case, text, pattern) => {
    const res = await importSkill(text);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(pattern);
  });

  test('front matter over 16 KiB is refused before it is read', async () => {
    const res = await importSkill(`---\nname: big\ndescription: y\n# ${'x'.repeat(17_000)}\n---\nbody\n`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/^front matter: is \d+ bytes; at most 16384/);
  });

  test('JSON is 415 for an import', async () => {
    expect((await importSkill('{}', 'application/json')).status).toBe(415);
  });
});

describe('versions', () => {
  test('listed, read, compared and restored', async () => {
    const { doc, etag } = await create(skill('versioned'));
    const second = await replace('versioned', etag, { ...doc, body: 'Second.' });
    const listed = await t.client().GET('/api/build/skills/{name}/versions', { params: { path: { name: 'versioned' } } });
    expect(listed.data!.data.map((v) => [v.version, v.changes])).toEqual([
      [2, ['body changed']],
      [1, ["skill 'versioned' created"]],
    ]);
    expect(listed.data!.data[1]!.version_id).toBe(`${doc.id}@1`);
    const one = await t.client().GET('/api/build/skills/{name}/versions/{version}', { params: { path: { name: 'versioned', version: '1' } } });
    expect(one.data!.data).toEqual(doc);
    const diff = await t.client().GET('/api/build/skills/{name}/versions/{version}/diff', { params: { path: { name: 'versioned', version: '1' } } });
    const patched = structuredClone(doc);
    applyPatch(patched, diff.data!.data.patch as never);
    expect(patched).toEqual(second.data!.data.document);
    const restored = await t.client().POST('/api/build/skills/{name}/versions/{version}/restore', {
      params: { path: { name: 'versioned', version: '1' }, header: { 'If-Match': second.response.headers.get('etag')! } },
    });
    expect(restored.response.status).toBe(200);
    expect(restored.data!.data).toMatchObject({ version: 3, changes: ['restored from version 1', 'body changed'], document: { version: 3, body: doc.body } });
    const stale = await t.client().POST('/api/build/skills/{name}/versions/{version}/restore', {
      params: { path: { name: 'versioned', version: '1' }, header: { 'If-Match': etag } },
    });
    expect(stale.response.status).toBe(409);
  });
});

describe('agents and their workspace_skills', () => {
  test('an agent may list only skills of the workspace; the skill cannot go while an agent lists it', async () => {
    await create(skill('triage-guide'));
    const unknown = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Lists unknown'), workspace_skills: ['triage-guide', 'nope'] } });
    expect(unknown.response.status).toBe(400);
    expect(unknown.error!.error).toMatch(/^body\.workspace_skills\[1\]: 'nope' is not a skill of this workspace/);
    const validated = await t.client().POST('/api/build/agents/validate', { body: { ...minimalAgent('Lists unknown'), workspace_skills: ['nope'] } });
    expect(validated.response.status).toBe(400);
    const agent = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Skilled agent'), workspace_skills: ['triage-guide'] } });
    expect(agent.response.status).toBe(201);
    const blocked = await t.client().DELETE('/api/build/skills/{name}', { params: { path: { name: 'triage-guide' } } });
    expect(blocked.response.status).toBe(409);
    expect(blocked.error).toEqual({ error: "skill 'triage-guide' is listed in workspace_skills by agents skilled-agent; remove it from them first" });
    expect((await t.client().GET('/api/build/skills/{name}', { params: { path: { name: 'triage-guide' } } })).response.status).toBe(200);
    const doc = agent.data!.data.document;
    const { id: _id, status: _status, slug: _slug, ...rest } = doc;
    const freed = await t.client().PUT('/api/build/agents/{ref}', {
      params: { path: { ref: doc.slug }, header: { 'If-Match': agent.response.headers.get('etag')! } },
      body: { ...rest, workspace_skills: [] } as never,
    });
    expect(freed.response.status).toBe(200);
    expect((await t.client().DELETE('/api/build/skills/{name}', { params: { path: { name: 'triage-guide' } } })).response.status).toBe(200);
  });
});

test('another workspace sees none of it', async () => {
  const { doc, etag } = await create(skill('private-skill'));
  const other = t.token({ workspace: 'ws-other' });
  const client = t.client(other);
  expect((await client.GET('/api/build/skills')).data!.data).toEqual([]);
  for (const [method, path, body, headers] of [
    ['GET', '/api/build/skills/private-skill'],
    ['GET', `/api/build/skills/${doc.id}`],
    ['GET', '/api/build/skills/private-skill/versions'],
    ['GET', '/api/build/skills/private-skill/versions/1'],
    ['GET', '/api/build/skills/private-skill/versions/1/diff'],
    ['POST', '/api/build/skills/private-skill/versions/1/restore', undefined, { 'if-match': etag }],
    ['PUT', '/api/build/skills/private-skill', JSON.stringify(doc), { 'if-match': etag, 'content-type': 'application/json' }],
    ['DELETE', '/api/build/skills/private-skill'],
  ] as [string, string, string | undefined, Record<string, string> | undefined][]) {
    const res = await send(method, path, body, headers, other);
    expect([method, path, res.status]).toEqual([method, path, 404]);
  }
  // The same name is free in the other workspace.
  expect((await client.PUT('/api/build/skills', { body: skill('private-skill') })).response.status).toBe(201);
});

test('over MCP: import_skill takes the SKILL.md text as its body, and get_skill reads the skill', async () => {
  const client = new Client({ name: 'skills-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${t.token({ workspace: 'ws-mcp' })}` } },
    }),
  );
  try {
    type Result = { isError?: boolean; content: { text: string }[]; structuredContent?: Record<string, unknown> };
    const imported = (await client.callTool({ name: 'import_skill', arguments: { body: SKILL_MD } })) as Result;
    expect(imported.isError).toBeFalsy();
    expect(imported.structuredContent).toMatchObject({ version: 1, document: { name: 'release-notes', metadata: { author: 'acme-docs', version: '1.2' } } });
    const read = (await client.callTool({ name: 'get_skill', arguments: { name: 'release-notes' } })) as Result;
    expect(read.structuredContent).toMatchObject({ name: 'release-notes', body: '# Release notes\n\nGroup the changes by area, newest first.\n' });
    const refused = (await client.callTool({ name: 'import_skill', arguments: { body: '# no front matter' } })) as Result;
    expect(refused.isError).toBe(true);
    expect(refused.content[0]!.text).toMatch(/^400: .*a SKILL\.md starts with front matter/);
  } finally {
    await client.close();
  }
});
