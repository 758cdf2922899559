// Spaces within a workspace (domain/spaces.ts), on the store under test: who sees, lists and writes
// which documents, for callers who are members of team alpha, of beta, of both, of none, and a
// workspace administrator; an invisible document is an unknown one for every operation; moves need
// both spaces; a document depends only on the workspace's and its own space's documents; list
// filters by space and folder; the same rule over MCP.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';

let t: TestService;
const tokens: Record<string, string> = {};
beforeAll(async () => {
  t = await startService();
  tokens.alpha = t.token({ user: 'ann', teams: ['alpha'] });
  tokens.beta = t.token({ user: 'ben', teams: ['beta'] });
  tokens.both = t.token({ user: 'bo', teams: ['alpha', 'beta'] });
  tokens.none = t.token({ user: 'nell' });
  tokens.admin = t.token({ user: 'ada', admin: true });
  const put = async (who: string, body: object) => {
    const res = await call(who, 'PUT', '/api/build/agents', body);
    expect([res.status, res.body.error]).toEqual([201, undefined]);
  };
  await put('none', { ...minimalAgent('Shared'), slug: 'shared' });
  await put('alpha', { ...minimalAgent('Alpha payroll'), slug: 'alpha-payroll', space: { team: 'alpha' }, folder: 'payroll/monthly' });
  await put('alpha', { ...minimalAgent('Alpha other'), slug: 'alpha-other', space: { team: 'alpha' }, folder: 'payroll2' });
  await put('beta', { ...minimalAgent('Beta'), slug: 'beta-agent', space: { team: 'beta' } });
});
afterAll(() => t.close());

async function call(who: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${t.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${tokens[who]}`, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    etag: res.headers.get('etag'),
    body: (text ? JSON.parse(text) : {}) as {
      error?: string; // biome-ignore lint/suspicious/noExplicitAny: a reply of any operation, read by each test as it knows it
      data?: any;
      next_cursor?: string | null;
    },
  };
}

const SEES: Record<string, string[]> = {
  alpha: ['alpha-other', 'alpha-payroll', 'shared'],
  beta: ['beta-agent', 'shared'],
  both: ['alpha-other', 'alpha-payroll', 'beta-agent', 'shared'],
  none: ['shared'],
  admin: ['alpha-other', 'alpha-payroll', 'beta-agent', 'shared'],
};
const ALL = ['alpha-other', 'alpha-payroll', 'beta-agent', 'shared'];

describe.each(Object.keys(SEES))('a caller of %s', (who) => {
  test('lists exactly the agents of its spaces', async () => {
    const list = await call(who, 'GET', '/api/build/agents');
    expect(list.body.data.map((a: { slug: string }) => a.slug).filter((s: string) => ALL.includes(s))).toEqual(SEES[who]);
  });

  test.each(ALL)('reads %s, or gets the 404 of an unknown agent', async (slug) => {
    const read = await call(who, 'GET', `/api/build/agents/${slug}`);
    if (SEES[who]!.includes(slug)) expect(read.status).toBe(200);
    else expect([read.status, read.body]).toEqual([404, { error: `agent '${slug}' not found in this workspace` }]);
  });
});

test('every operation on an agent the caller does not see is the 404 of an unknown agent, and writes nothing', async () => {
  const current = await call('alpha', 'GET', '/api/build/agents/alpha-payroll');
  const doc = current.body.data;
  const ops: [string, string, unknown, Record<string, string>?][] = [
    ['PUT', '/api/build/agents/alpha-payroll', { ...doc, name: 'Hijacked' }, { 'if-match': current.etag! }],
    ['POST', '/api/build/agents/alpha-payroll/status', { status: 'active' }, { 'if-match': current.etag! }],
    ['POST', '/api/build/agents/alpha-payroll/test', { prompt: 'hi' }],
    ['GET', '/api/build/agents/alpha-payroll/versions', undefined],
    ['GET', '/api/build/agents/alpha-payroll/versions/1', undefined],
    ['GET', '/api/build/agents/alpha-payroll/versions/1/diff?to=1', undefined],
    ['POST', '/api/build/agents/alpha-payroll/versions/1/restore', undefined, { 'if-match': current.etag! }],
    ['POST', '/api/build/agents/alpha-payroll/rotate-webhook', { trigger_id: '00000000-0000-4000-8000-000000000000' }],
  ];
  for (const caller of ['beta', 'none']) {
    for (const [method, path, body, headers] of ops) {
      const hidden = await call(caller, method, path, body, headers);
      const unknown = await call(caller, method, path.replace('alpha-payroll', 'no-such-agent'), body, headers);
      expect([method, path, hidden.status, hidden.body.error]).toEqual([method, path, 404, unknown.body.error!.replace('no-such-agent', 'alpha-payroll')]);
    }
  }
  const after = await call('alpha', 'GET', '/api/build/agents/alpha-payroll');
  expect(after.etag).toBe(current.etag);
});

test('a write puts a document only in a space its author sees; a move needs both spaces', async () => {
  const rule = (team: string, yours: string) =>
    `body.space.team: you are not a member of team '${team}', and a document may only be put in a space you belong to (${yours}; null is the workspace's space)`;
  const outsider = await call('none', 'PUT', '/api/build/agents', { ...minimalAgent('Sneaky'), slug: 'sneaky', space: { team: 'alpha' } });
  expect([outsider.status, outsider.body.error]).toEqual([400, rule('alpha', 'your token names no team')]);
  const validate = await call('beta', 'POST', '/api/build/agents/validate', { ...minimalAgent('Sneaky'), space: { team: 'alpha' } });
  expect([validate.status, validate.body.error]).toEqual([400, rule('alpha', 'yours: beta')]);
  const reserved = await call('admin', 'PUT', '/api/build/agents', { ...minimalAgent('Reserved'), space: { team: 'workspace' } });
  expect(reserved.status).toBe(400);

  const created = await call('alpha', 'PUT', '/api/build/agents', { ...minimalAgent('Mover'), slug: 'mover', space: { team: 'alpha' } });
  const away = await call('alpha', 'PUT', '/api/build/agents/mover', { ...created.body.data.document, space: { team: 'beta' } }, { 'if-match': created.etag! });
  expect([away.status, away.body.error]).toEqual([400, rule('beta', 'yours: alpha')]);
  const moved = await call('both', 'PUT', '/api/build/agents/mover', { ...created.body.data.document, space: { team: 'beta' } }, { 'if-match': created.etag! });
  expect(moved.status).toBe(200);
  expect((await call('alpha', 'GET', '/api/build/agents/mover')).status).toBe(404);
  expect((await call('beta', 'GET', '/api/build/agents/mover')).status).toBe(200);
  // An administrator writes in any space.
  const admin = await call('admin', 'PUT', '/api/build/agents', { ...minimalAgent('By admin'), slug: 'by-admin', space: { team: 'gamma' } });
  expect(admin.status).toBe(201);
  expect((await call('both', 'GET', '/api/build/agents/by-admin')).status).toBe(404);
});

test("a document depends only on the workspace's documents and its own space's", async () => {
  const workflow = (slug: string, team: string | null, agent: string) => ({
    kind: 'service.workflow/v1',
    slug,
    name: slug,
    space: { team },
    steps: [{ id: 'a', kind: 'agent', agent, prompt: 'hi' }],
  });
  const crossing = await call('both', 'PUT', '/api/build/workflows', workflow('crossing', null, 'alpha-payroll'));
  expect([crossing.status, crossing.body.error]).toEqual([
    400,
    "body.steps[0].agent: 'alpha-payroll' is not an agent this workflow's space can use (the workspace's agents, and its own team's); GET /api/build/agents lists them",
  ]);
  expect((await call('both', 'PUT', '/api/build/workflows', workflow('beta-uses-alpha', 'beta', 'alpha-payroll'))).status).toBe(400);
  expect((await call('alpha', 'PUT', '/api/build/workflows', workflow('alpha-own', 'alpha', 'alpha-payroll'))).status).toBe(201);
  expect((await call('alpha', 'PUT', '/api/build/workflows', workflow('alpha-shared', 'alpha', 'shared'))).status).toBe(201);

  // An agent moved out of reach after the workflow was written: the workflow's run is refused, naming the step.
  const helper = await call('both', 'PUT', '/api/build/agents', { ...minimalAgent('Helper'), slug: 'helper' });
  expect((await call('alpha', 'PUT', '/api/build/workflows', workflow('alpha-helper', 'alpha', 'helper'))).status).toBe(201);
  const moved = await call('both', 'PUT', '/api/build/agents/helper', { ...helper.body.data.document, space: { team: 'beta' } }, { 'if-match': helper.etag! });
  expect(moved.status).toBe(200);
  const run = await call('alpha', 'POST', '/api/build/workflows/alpha-helper/test', {});
  expect(run.status).toBe(409);
  expect(run.body.error).toContain("agent 'helper' is not an agent this workflow's space can use");

  // Workflows are spaced as agents are.
  expect((await call('beta', 'GET', '/api/build/workflows/alpha-own')).status).toBe(404);
  expect((await call('beta', 'DELETE', '/api/build/workflows/alpha-own')).status).toBe(404);
  expect((await call('alpha', 'GET', '/api/build/workflows/alpha-own')).status).toBe(200);
  const listed = await call('beta', 'GET', '/api/build/workflows');
  expect(listed.body.data.map((w: { slug: string }) => w.slug)).not.toContain('alpha-own');
});

test('lists filter by space and by folder, segment by segment', async () => {
  const slugs = async (who: string, query: string) =>
    (await call(who, 'GET', `/api/build/agents?${query}`)).body.data.map((a: { slug: string }) => a.slug).filter((s: string) => ALL.includes(s));
  expect(await slugs('both', 'space=alpha')).toEqual(['alpha-other', 'alpha-payroll']);
  expect(await slugs('both', 'space=workspace')).toEqual(['shared']);
  expect(await slugs('beta', 'space=alpha')).toEqual([]);
  expect(await slugs('alpha', 'folder=payroll')).toEqual(['alpha-payroll']);
  expect(await slugs('alpha', 'folder=payroll/monthly')).toEqual(['alpha-payroll']);
  expect(await slugs('alpha', 'folder=payroll2')).toEqual(['alpha-other']);
  expect(await slugs('beta', 'folder=payroll')).toEqual([]);
  const item = (await call('alpha', 'GET', '/api/build/agents?space=alpha')).body.data.find((a: { slug: string }) => a.slug === 'alpha-payroll');
  expect(item).toMatchObject({ space: { team: 'alpha' }, folder: 'payroll/monthly' });
});

test('over MCP, the same rule: an invisible agent is an unknown one', async () => {
  const client = new Client({ name: 'spaces-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${tokens.beta}` } } }),
  );
  try {
    const hidden = (await client.callTool({ name: 'get_agent', arguments: { ref: 'alpha-payroll' } })) as { isError?: boolean; content: { text: string }[] };
    expect(hidden.isError).toBe(true);
    expect(hidden.content[0]!.text).toBe(`404: ${JSON.stringify({ error: "agent 'alpha-payroll' not found in this workspace" })}`);
    const listed = (await client.callTool({ name: 'list_agents', arguments: {} })) as { content: { text: string }[] };
    const shown = JSON.parse(listed.content[0]!.text) as { slug: string }[] | { data: { slug: string }[] };
    const slugs = (Array.isArray(shown) ? shown : shown.data).map((a) => a.slug);
    expect(slugs.filter((s) => ALL.includes(s))).toEqual(['beta-agent', 'shared']);
  } finally {
    await client.close();
  }
});

describe('who belongs where, from the token', () => {
  const reads = (service: TestService, claims: Record<string, unknown>, scope = 'build') =>
    Promise.all(
      ['alpha-payroll', 'beta-agent'].map(async (slug) => {
        const res = await fetch(`${service.baseUrl}/api/build/agents/${slug}`, {
          headers: { authorization: `Bearer ${service.token({ user: 'probe', scope, claims })}` },
        });
        return res.status;
      }),
    );

  test('teams as an array or a space-separated string; entries that are not slugs ignored; the administrator by scope, permission or role', async () => {
    expect(await reads(t, { teams: ['alpha'] })).toEqual([200, 404]);
    expect(await reads(t, { teams: 'alpha beta' })).toEqual([200, 200]);
    expect(await reads(t, { teams: ['Alpha', 'beta team', 7, null, 'beta'] })).toEqual([404, 200]);
    expect(await reads(t, {}, 'build build:admin')).toEqual([200, 200]);
    expect(await reads(t, { permissions: ['build:admin'] })).toEqual([200, 200]);
    expect(await reads(t, { roles: ['build:admin'] })).toEqual([200, 200]);
    expect(await reads(t, { realm_access: { roles: ['build:admin'] } })).toEqual([200, 200]);
    expect(await reads(t, { roles: ['admin'], teams: [] })).toEqual([404, 404]);
  });

  test('AUTH_TEAMS_CLAIM names a namespaced claim or a dotted path; AUTH_ADMIN_GRANT names the grant', async () => {
    const namespaced = await startService({ AUTH_TEAMS_CLAIM: 'https://example.com/teams', AUTH_ADMIN_GRANT: 'platform-admin' });
    try {
      const admin = namespaced.token({ user: 'ada', scope: 'build platform-admin' });
      for (const [slug, team] of [
        ['alpha-payroll', 'alpha'],
        ['beta-agent', 'beta'],
      ] as const) {
        const created = await fetch(`${namespaced.baseUrl}/api/build/agents`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
          body: JSON.stringify({ ...minimalAgent(slug), slug, space: { team } }),
        });
        expect(created.status).toBe(201);
      }
      expect(await reads(namespaced, { 'https://example.com/teams': ['beta'] })).toEqual([404, 200]);
      expect(await reads(namespaced, { teams: ['alpha', 'beta'] })).toEqual([404, 404]);
      expect(await reads(namespaced, {}, 'build platform-admin')).toEqual([200, 200]);
      expect(await reads(namespaced, {}, 'build build:admin')).toEqual([404, 404]);
    } finally {
      await namespaced.close();
    }
  });
});

describe('runs follow the space of the document they run', () => {
  let runId: string;
  beforeAll(async () => {
    const created = await call('alpha', 'PUT', '/api/build/agents', {
      ...minimalAgent('Hooked alpha'),
      slug: 'hooked-alpha',
      space: { team: 'alpha' },
      triggers: [{ kind: 'webhook', name: 'In' }],
    });
    expect(created.status).toBe(201);
    expect((await call('alpha', 'POST', '/api/build/agents/hooked-alpha/status', { status: 'active' }, { 'if-match': created.etag! })).status).toBe(200);
    const delivered = await fetch(new URL(created.body.data.webhook_urls[0].url).pathname.replace(/^/, t.baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"order":1}',
    });
    expect(delivered.status).toBe(202);
    runId = ((await delivered.json()) as { data: { run_id: string } }).data.run_id;
  });

  test.each([
    ['alpha', 200],
    ['both', 200],
    ['admin', 200],
    ['beta', 404],
    ['none', 404],
  ])('a webhook run of a team agent, read by a caller of %s: %i; its events and its cancel alike', async (who, status) => {
    expect((await call(who, 'GET', `/api/build/runs/${runId}`)).status).toBe(status);
    expect((await call(who, 'GET', `/api/build/runs/${runId}/events`, undefined, { accept: 'application/json' })).status).toBe(status);
    const listed = await call(who, 'GET', '/api/build/runs?limit=100');
    expect(listed.body.data.some((r: { id: string }) => r.id === runId)).toBe(status === 200);
    if (status === 404) expect((await call(who, 'POST', `/api/build/runs/${runId}/cancel`)).status).toBe(404);
  });

  test('a run filter naming an agent the caller does not see is the 400 of an unknown agent', async () => {
    const hidden = await call('beta', 'GET', '/api/build/runs?agent=hooked-alpha');
    const unknown = await call('beta', 'GET', '/api/build/runs?agent=no-such-agent');
    expect([hidden.status, hidden.body.error]).toEqual([400, unknown.body.error!.replace('no-such-agent', 'hooked-alpha')]);
  });
});

describe('pages and folders', () => {
  test('a list with limit is paged by slug: each page continues after the last, Link names the next; filters and spaces hold on every page', async () => {
    const seen: string[] = [];
    let path = '/api/build/agents?limit=2';
    for (let pages = 0; pages < 20 && path; pages++) {
      const res = await fetch(`${t.baseUrl}${path}`, { headers: { authorization: `Bearer ${tokens.alpha}` } });
      const body = (await res.json()) as { data: { slug: string }[]; next_cursor: string | null };
      expect(body.data.length).toBeLessThanOrEqual(2);
      seen.push(...body.data.map((a) => a.slug));
      const link = res.headers.get('link');
      expect(link === null).toBe(body.next_cursor === null);
      path = link ? link.slice(1, link.indexOf('>')) : '';
    }
    const whole = (await call('alpha', 'GET', '/api/build/agents')).body;
    expect(whole.next_cursor).toBeNull();
    expect(seen).toEqual(whole.data.map((a: { slug: string }) => a.slug));
    expect(seen).not.toContain('beta-agent');
    const filtered = await call('alpha', 'GET', '/api/build/agents?space=alpha&limit=1');
    expect(filtered.body.data.map((a: { slug: string }) => a.slug)).toEqual(['alpha-other']);
    const next = await call('alpha', 'GET', `/api/build/agents?space=alpha&limit=1&cursor=${filtered.body.next_cursor}`);
    expect(next.body.data.map((a: { slug: string }) => a.slug)).toEqual(['alpha-payroll']);
    expect((await call('alpha', 'GET', '/api/build/agents?cursor=not-a-cursor')).status).toBe(400);
    expect((await call('alpha', 'GET', '/api/build/agents?limit=0')).status).toBe(400);
    const workflows = await call('alpha', 'GET', '/api/build/workflows?limit=1');
    expect([workflows.body.data.length, typeof workflows.body.next_cursor]).toEqual([1, 'string']);
  });

  test('folders: each path and those above it, with the agents in or below it that the caller sees, per space', async () => {
    const deep = await call('alpha', 'PUT', '/api/build/agents', {
      ...minimalAgent('Deep'),
      slug: 'deep',
      space: { team: 'alpha' },
      folder: 'payroll/monthly/2026',
    });
    expect(deep.status).toBe(201);
    const mine = await call('alpha', 'GET', '/api/build/folders');
    expect(mine.body.data).toEqual([
      { space: { team: 'alpha' }, path: 'payroll', agents: 2 },
      { space: { team: 'alpha' }, path: 'payroll/monthly', agents: 2 },
      { space: { team: 'alpha' }, path: 'payroll/monthly/2026', agents: 1 },
      { space: { team: 'alpha' }, path: 'payroll2', agents: 1 },
    ]);
    expect((await call('beta', 'GET', '/api/build/folders')).body.data).toEqual([]);
    expect((await call('admin', 'GET', '/api/build/folders?space=workspace')).body.data).toEqual([]);
    expect((await call('admin', 'GET', '/api/build/folders?space=alpha')).body.data).toEqual(mine.body.data);
  });
});

test('an invisible agent takes as long to refuse as an unknown one (medians of interleaved reads)', async () => {
  const timed = async (slug: string) => {
    const started = performance.now();
    await call('none', 'GET', `/api/build/agents/${slug}`);
    return performance.now() - started;
  };
  const hidden: number[] = [];
  const unknown: number[] = [];
  for (let i = 0; i < 150; i++) {
    hidden.push(await timed('alpha-payroll'));
    unknown.push(await timed(`no-such-agent-${i}`));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  // The lookup is the same; what differs (a row found, then its space checked) is a few microseconds.
  expect(Math.abs(median(hidden) - median(unknown))).toBeLessThan(Math.max(0.5, 0.5 * median(unknown)));
});

test("an agent's workflows name workflows of the workspace its space may use", async () => {
  const agent = (slug: string, team: string | null, workflows: string[]) => ({ ...minimalAgent(slug), slug, space: { team }, workflows });
  const unknown = await call('alpha', 'PUT', '/api/build/agents', agent('wants-unknown', null, ['no-such-workflow']));
  expect([unknown.status, unknown.body.error]).toEqual([
    400,
    "body.workflows[0]: 'no-such-workflow' is not a workflow this agent's space can use (the workspace's workflows, and its own team's); GET /api/build/workflows lists them",
  ]);
  // alpha-own lives in alpha's space: an agent of alpha may use it, one of the workspace's may not.
  expect((await call('alpha', 'PUT', '/api/build/agents', agent('wants-alpha', null, ['alpha-own']))).status).toBe(400);
  expect((await call('alpha', 'PUT', '/api/build/agents', agent('alpha-wants-alpha', 'alpha', ['alpha-own']))).status).toBe(201);
});

test('every operation on a workflow the caller does not see is the 404 of an unknown workflow, and writes nothing', async () => {
  const created = await call('alpha', 'PUT', '/api/build/workflows', {
    kind: 'service.workflow/v1',
    slug: 'alpha-flow',
    name: 'Alpha flow',
    space: { team: 'alpha' },
    steps: [{ id: 'a', kind: 'tool', tool: 'core.echo', args: {} }],
  });
  expect(created.status).toBe(201);
  const current = await call('alpha', 'GET', '/api/build/workflows/alpha-flow');
  const ops: [string, string, unknown, Record<string, string>?][] = [
    ['GET', '/api/build/workflows/alpha-flow', undefined],
    ['PUT', '/api/build/workflows/alpha-flow', { ...current.body.data, name: 'Hijacked' }, { 'if-match': current.etag! }],
    ['POST', '/api/build/workflows/alpha-flow/test', {}],
    ['GET', '/api/build/workflows/alpha-flow/versions', undefined],
    ['GET', '/api/build/workflows/alpha-flow/versions/1', undefined],
    ['GET', '/api/build/workflows/alpha-flow/versions/1/diff?to=1', undefined],
    ['POST', '/api/build/workflows/alpha-flow/versions/1/restore', undefined, { 'if-match': current.etag! }],
    ['DELETE', '/api/build/workflows/alpha-flow', undefined],
  ];
  for (const caller of ['beta', 'none']) {
    for (const [method, path, body, headers] of ops) {
      const hidden = await call(caller, method, path, body, headers);
      const unknown = await call(caller, method, path.replace('alpha-flow', 'no-such-flow'), body, headers);
      expect([method, path, hidden.status, hidden.body.error]).toEqual([method, path, 404, unknown.body.error!.replace('no-such-flow', 'alpha-flow')]);
    }
  }
  expect((await call('alpha', 'GET', '/api/build/workflows/alpha-flow')).etag).toBe(current.etag);
  // A workflow run of a team's workflow: its starter and no one outside the team reads it.
  const run = await call('alpha', 'POST', '/api/build/workflows/alpha-flow/test', {});
  expect(run.status).toBe(202);
  expect((await call('alpha', 'GET', `/api/build/workflow-runs/${run.body.data.run_id}`)).status).toBe(200);
  expect((await call('beta', 'GET', `/api/build/workflow-runs/${run.body.data.run_id}`)).status).toBe(404);
});

test('a replayed write answers only while its caller still sees what it is about', async () => {
  // The same user, first a member of alpha, then not: the token says so at each request.
  const member = t.token({ user: 'mover', teams: ['alpha'] });
  const former = t.token({ user: 'mover', teams: [] });
  const send = (token: string, method: string, path: string, body: unknown) =>
    fetch(`${t.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': `replay-${path}` },
      body: JSON.stringify(body),
    });
  const body = { ...minimalAgent('Replayed'), slug: 'replayed', space: { team: 'alpha' } };
  expect((await send(member, 'PUT', '/api/build/agents', body)).status).toBe(201);
  expect((await send(member, 'PUT', '/api/build/agents', body)).status).toBe(201);
  const gone = await send(former, 'PUT', '/api/build/agents', body);
  expect([gone.status, ((await gone.json()) as { error: string }).error]).toEqual([
    400,
    "body.space.team: you are not a member of team 'alpha', and a document may only be put in a space you belong to (your token names no team; null is the workspace's space)",
  ]);
  const started = await send(member, 'POST', '/api/build/agents/replayed/test', { prompt: 'hi' });
  expect(started.status).toBe(202);
  expect((await send(member, 'POST', '/api/build/agents/replayed/test', { prompt: 'hi' })).status).toBe(202);
  const refused = await send(former, 'POST', '/api/build/agents/replayed/test', { prompt: 'hi' });
  expect([refused.status, ((await refused.json()) as { error: string }).error]).toEqual([404, "agent 'replayed' not found in this workspace"]);
});

test("a slug is the workspace's: asking for one a hidden document has is the 409 of a visible one, naming nothing of it", async () => {
  const hidden = await call('none', 'PUT', '/api/build/agents', { ...minimalAgent('Mine'), slug: 'alpha-payroll' });
  const visible = await call('none', 'PUT', '/api/build/agents', { ...minimalAgent('Mine'), slug: 'shared' });
  expect([hidden.status, visible.status]).toEqual([409, 409]);
  expect(hidden.body).toEqual({ error: visible.body.error!.replace("'shared'", "'alpha-payroll'") });
  const listed = await call('none', 'GET', '/api/build/agents');
  expect(listed.body.data.map((a: { slug: string }) => a.slug)).not.toContain('alpha-payroll');
});
