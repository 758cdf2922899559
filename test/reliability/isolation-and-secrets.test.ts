// Isolation and secrets against a real server process. Another workspace's objects are 404 on
// every ref/runId operation (never 403), another user's runs are 404, lists show only the caller's
// workspace, read-only members never take effect; and webhook secrets appear exactly once — in the
// response that minted them — and never in a log line, a later response, the database (the SQLite
// file, or every row of the PostgreSQL database) or any file in the data directory.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { minimalAgent, replaceBody, storedPart } from '../helpers/fixtures';
import { storedBytes } from '../helpers/stored';
import { PUBLIC_BASE_URL, startServer, type ServerProcess } from './server';

jest.setTimeout(120_000);
let s: ServerProcess;
beforeAll(async () => {
  s = await startServer();
});
afterAll(() => s.dispose());

async function poll(path: string, token: string) {
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${s.baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
    const run = ((await res.json()) as { data: { status: string } }).data;
    if (['succeeded', 'failed', 'refused'].includes(run.status)) return run;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${path} did not finish`);
}

describe('isolation', () => {
  test("every ref and runId operation on another workspace is 404; another user's run is 404; lists stay apart", async () => {
    const owner = s.token({ user: 'alice', workspace: 'acme' });
    const a = s.client(owner);
    const agent = (await a.PUT('/api/build/agents', { body: { ...minimalAgent('Secret plan'), triggers: [{ kind: 'webhook', name: 'Hook' }] } })).data!.data
      .document;
    await a.PUT('/api/build/workflows', {
      body: { kind: 'service.workflow/v1', slug: 'private-flow', name: 'P', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] },
    });
    const skill = (await a.PUT('/api/build/skills', { body: { kind: 'service.skill/v1', name: 'private-skill', description: 'P', body: 'Private.' } })).data!
      .data.document;
    const agentRun = (await a.POST('/api/build/agents/{ref}/test', { params: { path: { ref: agent.id } }, body: { prompt: 'hi' } })).data!.data.run_id;
    const workflowRun = (await a.POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'private-flow' } }, body: {} })).data!.data.run_id;
    await poll(`/api/build/runs/${agentRun}`, owner);
    await poll(`/api/build/workflow-runs/${workflowRun}`, owner);

    const json = { 'content-type': 'application/json', 'if-match': '*' };
    const hookId = agent.triggers[0]!.id;
    const probes: [string, string, string?][] = [
      ['GET', `/api/build/agents/${agent.id}`],
      ['GET', `/api/build/agents/${agent.slug}`],
      ['PUT', `/api/build/agents/${agent.id}`, JSON.stringify(replaceBody(agent))],
      ['POST', `/api/build/agents/${agent.id}/status`, '{"status":"archived"}'],
      ['POST', `/api/build/agents/${agent.id}/test`, '{"prompt":"hi"}'],
      ['POST', `/api/build/agents/${agent.id}/rotate-webhook`, JSON.stringify({ trigger_id: hookId })],
      ['GET', '/api/build/workflows/private-flow'],
      [
        'PUT',
        '/api/build/workflows/private-flow',
        JSON.stringify({
          kind: 'service.workflow/v1',
          slug: 'private-flow',
          name: 'P',
          updated_at: '2026-01-01T00:00:00.000000Z',
          steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }],
        }),
      ],
      ['POST', '/api/build/workflows/private-flow/test', '{}'],
      ['DELETE', '/api/build/workflows/private-flow'],
      ['GET', '/api/build/skills/private-skill'],
      ['GET', `/api/build/skills/${skill.id}`],
      ['PUT', '/api/build/skills/private-skill', JSON.stringify(skill)],
      ['GET', '/api/build/skills/private-skill/versions'],
      ['GET', '/api/build/skills/private-skill/versions/1'],
      ['GET', '/api/build/skills/private-skill/versions/1/diff'],
      ['POST', '/api/build/skills/private-skill/versions/1/restore', '{}'], // a body, so If-Match is sent
      ['DELETE', '/api/build/skills/private-skill'],
      ['GET', `/api/build/runs/${agentRun}`],
      ['GET', `/api/build/workflow-runs/${workflowRun}`],
    ];
    const intruder = s.token({ user: 'mallory', workspace: 'other' });
    for (const [method, path, body] of probes) {
      const res = await fetch(`${s.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${intruder}`, ...(body && json) }, body });
      expect([method, path, res.status]).toEqual([method, path, 404]);
    }
    const colleague = s.token({ user: 'bob', workspace: 'acme' });
    for (const path of [`/api/build/runs/${agentRun}`, `/api/build/workflow-runs/${workflowRun}`]) {
      expect((await fetch(`${s.baseUrl}${path}`, { headers: { authorization: `Bearer ${colleague}` } })).status).toBe(404);
    }
    const other = s.client(intruder);
    expect((await other.GET('/api/build/agents')).data!.data).toEqual([]);
    expect((await other.GET('/api/build/workflows')).data!.data).toEqual([]);
    expect((await other.GET('/api/build/skills')).data!.data).toEqual([]);
    // The owner still sees everything unchanged.
    expect((await a.GET('/api/build/skills/{name}', { params: { path: { name: 'private-skill' } } })).data!.data).toEqual(skill);
    expect(storedPart((await a.GET('/api/build/agents/{ref}', { params: { path: { ref: agent.id } } })).data!.data)).toEqual(agent);
  });

  test('read-only members never take effect: status and secret_prefix are ignored, foreign trigger ids and id on create refused', async () => {
    const api = s.client(s.token({ workspace: 'ro' }));
    const created = await api.PUT('/api/build/agents', {
      body: { ...minimalAgent('Read only'), status: 'archived', triggers: [{ kind: 'webhook', name: 'Hook', secret_prefix: 'whk_fake' }] },
    });
    const doc = created.data!.data.document;
    expect(doc.status).toBe('draft');
    const hook = doc.triggers[0]! as { secret_prefix: string | null };
    expect(hook.secret_prefix).not.toBe('whk_fake');
    expect(hook.secret_prefix).toMatch(/^whk_/);

    const replaced = await api.PUT('/api/build/agents/{ref}', {
      params: { path: { ref: doc.id }, header: { 'If-Match': `"${doc.updated_at}"` } },
      body: { ...replaceBody(doc), status: 'active', triggers: [{ ...doc.triggers[0]!, secret_prefix: 'whk_fake' }] as never },
    });
    expect(replaced.data!.data.document.status).toBe('draft');
    expect((replaced.data!.data.document.triggers[0] as { secret_prefix: string }).secret_prefix).toBe(hook.secret_prefix);

    const foreign = await api.PUT('/api/build/agents', {
      body: { ...minimalAgent('Foreign'), triggers: [{ kind: 'webhook', name: 'H', id: doc.triggers[0]!.id }] },
    });
    expect(foreign.response.status).toBe(400);
    const withId = await api.PUT('/api/build/agents', { body: { ...minimalAgent('With id'), id: doc.id } as never });
    expect(withId.response.status).toBe(400);
  });
});

describe('secrets', () => {
  test('a webhook secret is shown once and found nowhere else: not in logs, later responses, the database or the data directory', async () => {
    const token = s.token({ workspace: 'hooks' });
    const api = s.client(token);
    const secrets: string[] = [];
    const secretOf = (url: string) => url.split('/').pop() as string;

    const created = await api.PUT('/api/build/agents', {
      body: {
        ...minimalAgent('Hooks'),
        triggers: [
          { kind: 'webhook', name: 'One' },
          { kind: 'webhook', name: 'Two' },
        ],
      },
    });
    secrets.push(...created.data!.data.webhook_urls!.map((u) => secretOf(u.url)));
    let doc = created.data!.data.document;
    for (const trigger of doc.triggers) {
      const rotated = await api.POST('/api/build/agents/{ref}/rotate-webhook', { params: { path: { ref: doc.id } }, body: { trigger_id: trigger.id } });
      secrets.push(secretOf(rotated.data!.data.url));
    }
    doc = (await api.GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } })).data!.data;
    const dropped = await api.PUT('/api/build/agents/{ref}', {
      params: { path: { ref: doc.id }, header: { 'If-Match': `"${doc.updated_at}"` }, query: { force: 'true' } },
      body: { ...replaceBody(doc), triggers: [doc.triggers[0]!, { kind: 'webhook', name: 'Three' }] as never },
    });
    secrets.push(...dropped.data!.data.webhook_urls!.map((u) => secretOf(u.url)));
    expect(secrets).toHaveLength(5);
    for (const secret of secrets) expect(secret).toMatch(/^whk_[A-Za-z0-9_-]{43}$/);

    const later = [
      await (await fetch(`${s.baseUrl}/api/build/agents/${doc.id}`, { headers: { authorization: `Bearer ${token}` } })).text(),
      await (await fetch(`${s.baseUrl}/api/build/agents`, { headers: { authorization: `Bearer ${token}` } })).text(),
    ];
    // Every file of the data directory (with SQLite: the database file and its WAL), and all the database holds (with PostgreSQL: every row, as text).
    const files = [...fs.readdirSync(s.dataDir).map((f) => fs.readFileSync(`${s.dataDir}/${f}`)), await storedBytes(s)];
    for (const secret of secrets) {
      for (const body of later) expect(body).not.toContain(secret);
      for (const line of s.logs) expect(line).not.toContain(secret);
      for (const file of files) expect(file.includes(Buffer.from(secret))).toBe(false);
    }
    // Nor any bearer token: the logs never carry one.
    for (const line of s.logs) expect(line).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./);
  });

  test('signing keys are sealed at rest and a create repeated with its Idempotency-Key withholds what it showed once: no URL secret or signing key in any file, row or log line', async () => {
    const token = s.token({ workspace: 'signed' });
    const secrets: string[] = [];
    const signed = (name: string) => ({ kind: 'webhook' as const, name, signing: 'standard-webhooks' as const });
    const create = (body: unknown, key?: string) =>
      fetch(`${s.baseUrl}/api/build/agents`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(key && { 'idempotency-key': key }) },
        body: JSON.stringify(body),
      });
    type Written = {
      data: {
        document: { id: string; slug: string; updated_at: string };
        webhook_urls?: { trigger_id: string; url: string; signing_secret?: string }[];
        webhook_urls_withheld?: string[];
      };
    };
    const remember = (written: Written) => {
      for (const u of written.data.webhook_urls ?? []) {
        secrets.push(u.url.split('/').pop()!, u.signing_secret!, u.signing_secret!.replace(/^whsec_/, ''));
      }
    };

    const body = { ...minimalAgent('Signed once'), triggers: [signed('A'), signed('B')] };
    const first = await create(body, 'create-signed-1');
    expect(first.status).toBe(201);
    const firstBody = (await first.json()) as Written;
    remember(firstBody);
    expect(firstBody.data.webhook_urls).toHaveLength(2);

    const repeat = await create(body, 'create-signed-1');
    expect(repeat.status).toBe(201);
    const repeatBody = (await repeat.json()) as Written;
    expect(repeatBody.data.webhook_urls).toBeUndefined();
    expect(repeatBody.data.webhook_urls_withheld).toEqual(firstBody.data.webhook_urls!.map((u) => u.trigger_id));
    expect(repeatBody.data.document).toEqual(firstBody.data.document);

    const plain = await create({ ...minimalAgent('Signed plain'), triggers: [signed('C')] });
    remember((await plain.json()) as Written);
    expect(secrets).toHaveLength(9);

    // The sealed key still verifies: a delivery signed by hand with the key the create showed.
    const agent = firstBody.data.document;
    await s.client(token).POST('/api/build/agents/{ref}/status', {
      params: { path: { ref: agent.id }, header: { 'If-Match': `"${agent.updated_at}"` } },
      body: { status: 'active' },
    });
    const hook = firstBody.data.webhook_urls![0]!;
    const payload = '{"ticket":1}';
    const ts = Math.floor(Date.now() / 1000);
    const signature = crypto
      .createHmac('sha256', Buffer.from(hook.signing_secret!.replace(/^whsec_/, ''), 'base64'))
      .update(`msg_1.${ts}.${payload}`)
      .digest('base64');
    const delivered = await fetch(hook.url.replace(PUBLIC_BASE_URL, s.baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1', 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${signature}` },
      body: payload,
    });
    expect(delivered.status).toBe(202);

    const files = [...fs.readdirSync(s.dataDir).map((f) => fs.readFileSync(`${s.dataDir}/${f}`)), await storedBytes(s)];
    for (const secret of secrets) {
      for (const line of s.logs) expect(line).not.toContain(secret);
      for (const file of files) expect([secret, file.includes(Buffer.from(secret))]).toEqual([secret, false]);
    }
  });
});

describe('access log', () => {
  test('each request is logged once, with its id, status and workspace, and without its query string', async () => {
    const token = s.token({ workspace: 'logged' });
    const requests: [string, string, Record<string, string>, number][] = [
      ['log-read', '/api/build/agents', { authorization: `Bearer ${token}` }, 200],
      ['log-401', '/api/build/agents', {}, 401],
      ['log-404-api', '/api/build/nothing-here?secret=abc', { authorization: `Bearer ${token}` }, 404],
      ['log-probe', '/healthz', {}, 200],
      ['log-404', '/nothing-here', {}, 404],
    ];
    for (const [id, path, headers, status] of requests) {
      expect((await fetch(`${s.baseUrl}${path}`, { headers: { ...headers, 'x-request-id': id } })).status).toBe(status);
    }
    const linesOf = (id: string) => s.logs.filter((line) => line.includes(`"reqId":"${id}"`)).map((line) => JSON.parse(line) as Record<string, unknown>);
    const deadline = Date.now() + 5000;
    while (requests.some(([id]) => linesOf(id).length === 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 100)); // room for a second line, were one written
    for (const [id, path, , status] of requests) {
      const lines = linesOf(id);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ msg: 'request', method: 'GET', path: path.split('?')[0], status });
      expect(lines[0]!.ms).toEqual(expect.any(Number));
    }
    expect(linesOf('log-read')[0]!.workspace).toBe('logged');
  });
});
