// Skills at run time (issue 45): the marketplace (the repository's skills/) in the catalog and in
// an agent's `skills`; an agent's runs load its workspace and marketplace skills with skills.load
// and skills.file (the path confined to the skill's own files), and record the versions loaded.
import type { components } from '../../generated/api';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun } from '../helpers/runs';
import { startService, type TestService } from '../helpers/service';

type SkillCreate = components['schemas']['SkillCreate'];
let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

const refundPolicy: SkillCreate = {
  kind: 'service.skill/v1',
  name: 'refund-policy',
  description: 'How refunds are decided.',
  body: '# Refunds\n\nRefund within 30 days of delivery. See references/limits.md.\n',
  files: [{ path: 'references/limits.md', content: 'At most 500 EUR without a manager.' }],
};

async function agentWith(skills: string[], workspaceSkills: string[]): Promise<string> {
  const slug = `skilled-${skills.length}-${workspaceSkills.length}-${Date.now()}`;
  const res = await t
    .client()
    .PUT('/api/build/agents', { body: { ...minimalAgent('Skilled'), slug, skills, workspace_skills: workspaceSkills, max_steps: 6 } });
  expect(res.response.status).toBe(201);
  return slug;
}

async function run(agent: string, lines: string[], version?: number) {
  const res = await t.client().POST('/api/build/agents/{ref}/test', {
    params: { path: { ref: agent } },
    body: { prompt: lines.join('\n'), ...(version !== undefined && { version }) },
  });
  expect(res.response.status).toBe(202);
  return waitForAgentRun(t, res.data!.data.run_id);
}

test('the catalog lists the marketplace; an agent may name its skills and no others', async () => {
  const catalog = (await t.client().GET('/api/build/catalog')).data!.data;
  expect(catalog.skills.map((s) => s.slug)).toEqual(['careful-writes', 'http-requests', 'kv-records', 'workflow-delegation']);
  expect(catalog.skills.find((s) => s.slug === 'kv-records')).toEqual({
    slug: 'kv-records',
    name: 'kv-records',
    description: expect.stringContaining('kv app'),
    version: '1.0',
  });
  const unknown = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Unknown skill'), skills: ['kv-records', 'no-such-skill'] } });
  expect(unknown.response.status).toBe(400);
  expect(unknown.error!.error).toContain("body.skills[1]: 'no-such-skill' is not a skill of the marketplace");
});

test('a run loads workspace and marketplace skills, reads files inside them only, and records the versions', async () => {
  expect((await t.client().PUT('/api/build/skills', { body: refundPolicy })).response.status).toBe(201);
  const agent = await agentWith(['kv-records', 'http-requests'], ['refund-policy']);
  const done = await run(agent, [
    '/call skills.load {"name":"refund-policy"}',
    '/call skills.file {"name":"refund-policy","path":"references/limits.md"}',
    '/call skills.file {"name":"refund-policy","path":"../../etc/passwd"}',
    '/call skills.file {"name":"http-requests","path":"references/pagination.md"}',
    '/call skills.load {"name":"careful-writes"}',
  ]);
  expect(done.status).toBe('succeeded');
  const [load, file, outside, marketFile, notListed] = done.tool_calls;
  expect(load).toMatchObject({ status: 'succeeded', output: { name: 'refund-policy', source: 'workspace', version: '1', instructions: refundPolicy.body } });
  expect((load!.output as { files: unknown }).files).toEqual([{ path: 'references/limits.md', bytes: 34 }]);
  expect(file!.output).toEqual({ name: 'refund-policy', path: 'references/limits.md', content: 'At most 500 EUR without a manager.' });
  expect(outside).toMatchObject({ status: 'failed', error: "'../../etc/passwd' is not a file of skill 'refund-policy' (its files: references/limits.md)" });
  expect((marketFile!.output as { content: string }).content).toContain('pagination');
  // careful-writes is the marketplace's, but this agent does not list it.
  expect(notListed).toMatchObject({ status: 'failed', error: expect.stringContaining('invalid arguments for skills.load') });
  // The instructions reach the model as the tool's answer, in the transcript.
  expect(done.transcript.some((m) => m.role === 'tool' && m.content?.includes('Refund within 30 days'))).toBe(true);
  expect(done.skills_loaded).toEqual([
    { name: 'refund-policy', source: 'workspace', version: '1' },
    { name: 'http-requests', source: 'marketplace', version: '1.0' },
  ]);
});

test("a run loads the skill's current version, a pinned agent version too, and the version it loaded stays readable", async () => {
  const name = 'tone-guide';
  const created = await t.client().PUT('/api/build/skills', {
    body: { kind: 'service.skill/v1', name, description: 'Tone.', body: 'Be brief.' },
  });
  expect(created.response.status).toBe(201);
  const agent = await agentWith([], [name]);
  const first = await run(agent, [`/call skills.load {"name":"${name}"}`]);
  expect(first.skills_loaded).toEqual([{ name, source: 'workspace', version: '1' }]);

  const current = (await t.client().GET('/api/build/skills/{name}', { params: { path: { name } } })).data!.data;
  const replaced = await t.client().PUT('/api/build/skills/{name}', {
    params: { path: { name }, header: { 'If-Match': `"${current.updated_at}"` } },
    body: { kind: 'service.skill/v1', name, description: 'Tone.', body: 'Be brief and kind.', updated_at: current.updated_at },
  } as never);
  expect(replaced.response.status).toBe(200);

  const pinned = await run(agent, [`/call skills.load {"name":"${name}"}`], 1);
  expect(pinned.version).toBe(1);
  expect(pinned.skills_loaded).toEqual([{ name, source: 'workspace', version: '2' }]);
  expect((pinned.tool_calls[0]!.output as { instructions: string }).instructions).toBe('Be brief and kind.');
  const kept = await t.client().GET('/api/build/skills/{name}/versions/{version}', { params: { path: { name, version: '1' } } });
  expect(kept.data!.data.body).toBe('Be brief.');
});

test("another workspace's agent cannot load this workspace's skills", async () => {
  const other = t.client(t.token({ workspace: 'ws-other' }));
  const res = await other.PUT('/api/build/agents', { body: { ...minimalAgent('Elsewhere'), workspace_skills: ['refund-policy'] } });
  expect(res.response.status).toBe(400);
  expect(res.error!.error).toContain('body.workspace_skills[0]');
});
