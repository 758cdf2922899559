// Three `build-api serve` processes on one PostgreSQL database, as replicas behind a load balancer:
// every request goes to one of them at random. The guarantees must hold across them: one winner of
// a compare-and-set, every accepted run executed exactly once, a killed replica's runs finished by
// another once their lease passes (credits exact), a write on one visible to the next read on any
// other, tokens verified by all, and a run's events streamed by a replica that does not execute it.
// (Always on PostgreSQL, whatever TEST_STORE says: only it has replicas.)
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import pg from 'pg';
import { createPgDatabase } from '../helpers/database';
import { minimalAgent, replaceBody } from '../helpers/fixtures';
import { readEventStream } from '../helpers/events';
import { startEventReceiver } from '../helpers/event-receiver';
import { parseStampMicros } from '../../src/domain/stamps';
import { INTERRUPTED } from '../../src/runtime/runner';
import { pgMigrationsDir } from '../../src/paths';
import { Client as McpClient, StreamableHTTPClientTransport as McpTransport } from '@modelcontextprotocol/client';
import { Client as V1McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1McpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServer, type ServerProcess } from './server';

jest.setTimeout(300_000);

const INITIAL_CREDITS = 1_000_000;
const VALIDATIONS_QUOTA = 30;
let database: { url: string; drop(): Promise<void> };
let sql: pg.Pool;
let replicas: ServerProcess[];
/** How often the hit target saw each path: a run's http step hits /hit/<n> once per execution. */
const hits = new Map<string, number>();
let target: http.Server;
let targetUrl: string;

const anyReplica = () => replicas[Math.floor(Math.random() * replicas.length)] as ServerProcess;
const count = async (text: string, params: unknown[] = []) => Number((await sql.query(text, params)).rows[0].n);
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  target = http.createServer((req, res) => {
    hits.set(req.url as string, (hits.get(req.url as string) ?? 0) + 1);
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  database = await createPgDatabase();
  sql = new pg.Pool({ connectionString: database.url, max: 2 });
  const env = {
    DATABASE_URL: database.url,
    RUN_LEASE_SECONDS: '2',
    HTTP_TOOL_ALLOW_PRIVATE: 'true',
    DEFAULT_CREDITS: String(INITIAL_CREDITS),
    RUN_WORKERS: '8',
    // One key for the secrets every replica seals and opens (connections' signing secrets), as deployed.
    SECRETS_KEY: crypto.randomBytes(32).toString('base64'),
    // Only the quota case validates: its callers' validations are counted across the replicas.
    RATE_LIMIT_WINDOW_SECONDS: '3600',
    RATE_LIMIT_CALLER_VALIDATIONS: String(VALIDATIONS_QUOTA),
  };
  // Started together: the migrations and the issuer's key are created once, under their locks.
  replicas = await Promise.all([startServer(env), startServer(env), startServer(env)]);
});

afterAll(async () => {
  await Promise.all((replicas ?? []).map((r) => r.dispose()));
  await sql?.end();
  await database?.drop();
  await new Promise((resolve) => target?.close(resolve));
});

test('replicas started together applied each migration once and share one issuer key: a token from any verifies on all', async () => {
  expect(await count('SELECT COUNT(*) AS n FROM schema_migrations')).toBe(fs.readdirSync(pgMigrationsDir).filter((f) => f.endsWith('.sql')).length);
  expect(await count('SELECT COUNT(*) AS n FROM issuer_keys')).toBe(1);
  for (const minter of replicas) {
    const token = minter.token({ workspace: 'ws-tokens' });
    for (const verifier of replicas) expect((await verifier.client(token).GET('/api/build/agents')).response.status).toBe(200);
  }
});

test('200 replaces with one stamp spread over the replicas: exactly one wins; every replica then reads the winner', async () => {
  const created = await anyReplica()
    .client()
    .PUT('/api/build/agents', { body: minimalAgent('Contended') });
  const doc = created.data!.data.document;
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      anyReplica()
        .client()
        .PUT('/api/build/agents/{ref}', {
          params: { path: { ref: doc.id }, header: { 'If-Match': `"${doc.updated_at}"` } },
          body: { ...replaceBody(doc), instructions: `writer ${i}` },
        }),
    ),
  );
  const winners = results.filter((r) => r.response.status === 200);
  expect(winners).toHaveLength(1);
  expect(results.filter((r) => r.response.status === 409)).toHaveLength(199);
  const winner = winners[0]!.data!.data;
  expect(winner.version).toBe(2);
  for (const replica of replicas) {
    const read = await replica.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } });
    expect(read.data!.data).toEqual(winner.document);
  }
});

test('reads after writes on other replicas see the write (documents, lists, version pages); stamps strictly increase across replicas', async () => {
  for (let i = 0; i < 60; i++) {
    const [a, b, c] = [...replicas].sort(() => Math.random() - 0.5) as [ServerProcess, ServerProcess, ServerProcess];
    const created = await a.client().PUT('/api/build/workflows', {
      body: { kind: 'service.workflow/v1', slug: `raw-${i}`, name: `Raw ${i}`, steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] },
    });
    expect(created.response.status).toBe(201);
    let doc = created.data!.data.document;
    const read = await b.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: doc.slug } } });
    expect(read.data!.data).toEqual(doc);
    let last = parseStampMicros(doc.updated_at)!;
    for (const writer of [c, a, b]) {
      const replaced = await writer.client().PUT('/api/build/workflows/{ref}', {
        params: { path: { ref: doc.slug }, header: { 'If-Match': `"${doc.updated_at}"` } },
        body: { ...doc, name: `${doc.name}+` },
      });
      expect(replaced.response.status).toBe(200);
      doc = replaced.data!.data.document;
      expect(parseStampMicros(doc.updated_at)!).toBeGreaterThan(last);
      last = parseStampMicros(doc.updated_at)!;
      const reader = anyReplica();
      const after = await reader.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: doc.slug } } });
      expect(after.data!.data).toEqual(doc);
      const list = await anyReplica().client().GET('/api/build/workflows');
      expect(list.data!.data.find((w) => w.slug === doc.slug)).toMatchObject({
        name: doc.name,
        updated_at: doc.updated_at,
        version: replaced.data!.data.version,
      });
      // Every replica held the version list's first page of the previous version (read after the previous write): each shows this one first.
      for (const replica of replicas) {
        const page = await replica.client().GET('/api/build/workflows/{ref}/versions', { params: { path: { ref: doc.slug }, query: { limit: 2 } } });
        expect(page.data!.data.map((v) => v.version)).toEqual([replaced.data!.data.version, replaced.data!.data.version - 1]);
      }
    }
  }
});

test("a caller's quota is shared by the replicas: of 120 validations at once spread over them, exactly the quota is admitted", async () => {
  const validate = (user: string) => {
    const replica = anyReplica();
    return fetch(`${replica.baseUrl}/api/build/agents/validate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${replica.token({ user, workspace: 'ws-quota' })}`, 'content-type': 'application/json' },
      body: JSON.stringify(minimalAgent('Checked')),
    });
  };
  const replies = await Promise.all(Array.from({ length: 120 }, () => validate('validator')));
  const statuses = replies.map((r) => r.status);
  expect(statuses.filter((s) => s === 200)).toHaveLength(VALIDATIONS_QUOTA);
  expect(statuses.filter((s) => s === 429)).toHaveLength(120 - VALIDATIONS_QUOTA);
  for (const refused of replies.filter((r) => r.status === 429)) {
    expect(refused.headers.get('ratelimit')).toMatch(/"caller-validations";r=0;t=\d+/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  }
  // Another caller of the workspace has a quota of its own.
  expect((await validate('another-validator')).status).toBe(200);
});

test('1,000 test runs accepted across the replicas: each executed exactly once, credits exact', async () => {
  const workspace = 'ws-runs';
  const create = await anyReplica()
    .client(anyReplica().token({ workspace }))
    .PUT('/api/build/workflows', {
      body: {
        kind: 'service.workflow/v1',
        slug: 'hit',
        name: 'Hit',
        inputs: { n: {} },
        steps: [{ id: 'hit', kind: 'tool', tool: 'http.request', args: { method: 'GET', url: `${targetUrl}/hit/{{inputs.n}}` } }],
      },
    });
  expect(create.response.status).toBe(201);
  const runIds: string[] = [];
  for (let batch = 0; batch < 20; batch++) {
    const started = await Promise.all(
      Array.from({ length: 50 }, (_, i) => {
        const replica = anyReplica();
        return replica
          .client(replica.token({ workspace }))
          .POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'hit' } }, body: { input: { n: batch * 50 + i } } });
      }),
    );
    for (const res of started) {
      expect(res.response.status).toBe(202);
      runIds.push(res.data!.data.run_id as string);
    }
  }
  await until(
    'every run to end',
    async () => (await count(`SELECT COUNT(*) AS n FROM runs WHERE workspace_id = $1 AND finished_at IS NULL`, [workspace])) === 0,
    120_000,
  );
  expect(await count(`SELECT COUNT(*) AS n FROM runs WHERE workspace_id = $1 AND status = 'succeeded'`, [workspace])).toBe(1000);
  for (let n = 0; n < 1000; n++) expect([n, hits.get(`/hit/${n}`)]).toEqual([n, 1]);
  // Claimed once each: one run.started event per run, numbered without gaps.
  expect(await count(`SELECT COUNT(*) AS n FROM run_events WHERE type = 'run.started' AND run_id = ANY($1)`, [runIds])).toBe(1000);
  expect(
    await count(`SELECT COUNT(*) AS n FROM (SELECT run_id FROM run_events WHERE run_id = ANY($1) GROUP BY run_id HAVING MAX(seq) != COUNT(*)) g`, [runIds]),
  ).toBe(0);
  const spent = await count(`SELECT SUM(credits_spent) AS n FROM runs WHERE workspace_id = $1`, [workspace]);
  expect(spent).toBe(1000);
  expect(await count('SELECT credits AS n FROM workspace_balances WHERE id = $1', [workspace])).toBe(INITIAL_CREDITS - spent);
});

test('a run executing on one replica is streamed by another as it happens', async () => {
  const workspace = 'ws-stream';
  const token = replicas[0]!.token({ workspace });
  await anyReplica()
    .client(token)
    .PUT('/api/build/workflows', {
      body: {
        kind: 'service.workflow/v1',
        slug: 'slow',
        name: 'Slow',
        steps: [
          { id: 'one', kind: 'tool', tool: 'core.sleep', args: { ms: 400 } },
          { id: 'two', kind: 'tool', tool: 'core.sleep', args: { ms: 400 }, after: ['one'] },
        ],
      },
    });
  const started = await anyReplica()
    .client(token)
    .POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'slow' } }, body: {} });
  const runId = started.data!.data.run_id as string;
  // Which replica executes it (its lease names the process), and a stream from one that does not.
  let owner = '';
  await until('the run to be claimed', async () => {
    owner = ((await sql.query('SELECT lease_owner FROM runs WHERE id = $1', [runId])).rows[0]?.lease_owner as string | null) ?? '';
    return owner !== '';
  });
  const streamer = replicas.find((r) => !owner.includes(`/${r.pid()}/`)) as ServerProcess;
  // Still going as the stream opens: what follows reaches it live, from the other replica's writes.
  expect((await sql.query('SELECT status FROM runs WHERE id = $1', [runId])).rows[0].status).toBe('running');
  const stream = await readEventStream(`${streamer.baseUrl}/api/build/workflow-runs/${runId}/events`, token, { forMs: 15_000 });
  expect(stream.status).toBe(200);
  expect(stream.ended).toBe(true);
  expect(stream.events.map((e) => e.id)).toEqual(stream.events.map((_, i) => i + 1));
  expect(stream.events.map((e) => e.event)).toEqual([
    'run.queued',
    'run.started',
    'step.started',
    'step.finished',
    'step.started',
    'step.finished',
    'run.finished',
  ]);
  expect(stream.events.at(-1)!.data).toMatchObject({ data: { status: 'succeeded' } });
});

test('an MCP client whose every request goes to another replica: builds, replaces and waits for a run (the server is stateless)', async () => {
  const workspace = 'ws-mcp';
  const token = replicas[0]!.token({ workspace });
  const served = new Set<string>();
  // Each request of the session to the replica after the last one's: the 2025 leg's initialize and
  // its calls, and each 2026-07-28 request, land on different processes.
  let next = 0;
  const spread = (_input: string | URL | Request, init?: RequestInit) => {
    const replica = replicas[next++ % replicas.length] as ServerProcess;
    served.add(replica.baseUrl);
    return fetch(`${replica.baseUrl}/mcp`, init);
  };
  const headers = { Authorization: `Bearer ${token}` };
  const v2 = new McpClient({ name: 'replicas-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
  await v2.connect(new McpTransport(new URL(`${replicas[0]!.baseUrl}/mcp`), { requestInit: { headers }, fetch: spread }));
  const v1 = new V1McpClient({ name: 'replicas-v1', version: '1.0.0' });
  await v1.connect(new V1McpTransport(new URL(`${replicas[0]!.baseUrl}/mcp`), { requestInit: { headers }, fetch: spread }));
  for (const [i, client] of [v2, v1].entries()) {
    const created = (await client.callTool({
      name: 'create_workflow',
      arguments: {
        body: { kind: 'service.workflow/v1', slug: `mcp-${i}`, name: 'MCP', steps: [{ id: 'one', kind: 'tool', tool: 'core.sleep', args: { ms: 300 } }] },
      },
    })) as { structuredContent: { document: { updated_at: string } } };
    const document = created.structuredContent.document;
    const replaced = (await client.callTool({
      name: 'replace_workflow',
      arguments: { ref: `mcp-${i}`, if_match: document.updated_at, body: { ...document, name: 'MCP, renamed' } },
    })) as { isError?: boolean; structuredContent: { version: number } };
    expect(replaced.isError).toBeFalsy();
    expect(replaced.structuredContent.version).toBe(2);
    const started = (await client.callTool({ name: 'test_workflow', arguments: { ref: `mcp-${i}`, body: {} } })) as { structuredContent: { run_id: string } };
    const run = (await client.callTool({ name: 'get_workflow_run', arguments: { runId: started.structuredContent.run_id, wait_seconds: 30 } })) as {
      structuredContent: { status: string; workflow_version_id: string };
    };
    expect(run.structuredContent).toMatchObject({ status: 'succeeded', workflow_version_id: expect.stringMatching(/@2$/) });
  }
  expect(served.size).toBe(replicas.length);
  await Promise.all([v2.close(), v1.close()]);
});

test('app events across the replicas: one signed delivery sent 30 times at once over them starts one run per trigger; kv events run once each', async () => {
  const workspace = 'ws-events';
  const client = (i: number) => replicas[i % replicas.length]!.client(replicas[0]!.token({ workspace }));
  const connection = await client(0).PUT('/api/build/connections', {
    body: { ref: 'github:replicas', app: 'github', credentials: { kind: 'signing_secret', secret: 'replica-secret' } },
  });
  const receivePath = new URL(connection.data!.data.receive_url!).pathname;
  await client(1).PUT('/api/build/connections', { body: { ref: 'kv:replicas', app: 'kv', credentials: { kind: 'none' } } });
  const created = await client(2).PUT('/api/build/agents', {
    body: {
      ...minimalAgent('Replica listener'),
      max_steps: 8,
      tools: { apps: ['kv'], connections: 'all', disabled_tools: [], approval: 'destructive' },
      triggers: [
        { kind: 'app_event', name: 'Pushes', app: 'github', event: 'push', connection: 'github:replicas' },
        { kind: 'app_event', name: 'All GitHub', app: 'github', event: '*', connection: 'github:replicas' },
        { kind: 'app_event', name: 'Keys', app: 'kv', event: 'key.set', connection: 'kv:replicas', key_prefix: 'job/' },
      ],
    },
  });
  const agent = created.data!.data.document;
  await client(0).POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: agent.id }, header: { 'If-Match': created.response.headers.get('etag')! } },
    body: { status: 'active' },
  });
  const body = JSON.stringify({ ref: 'refs/heads/main' });
  const headers = {
    'content-type': 'application/json',
    'x-github-event': 'push',
    'x-github-delivery': 'replicated-delivery-1',
    'x-hub-signature-256': `sha256=${crypto.createHmac('sha256', 'replica-secret').update(body).digest('hex')}`,
  };
  const replies = await Promise.all(
    Array.from({ length: 30 }, (_, i) => fetch(`${replicas[i % replicas.length]!.baseUrl}${receivePath}`, { method: 'POST', headers, body })),
  );
  expect(replies.map((r) => r.status)).toEqual(Array(30).fill(200));
  const [pushes, all, keys] = agent.triggers.map((t) => t.id);
  const runsOf = (trigger: string | undefined) => count('SELECT COUNT(*) AS n FROM runs WHERE trigger_id = $1', [trigger]);
  expect([await runsOf(pushes), await runsOf(all)]).toEqual([1, 1]);
  // Five keys written by one run: every replica's dispatcher looks for them; each starts one run.
  const writes = Array.from({ length: 5 }, (_, i) => `/call kv.set {"key":"job/${i}","value":${i}}`).join('\n');
  await client(1).POST('/api/build/agents/{ref}/test', { params: { path: { ref: agent.slug } }, body: { prompt: writes } });
  await until('five kv runs', async () => (await runsOf(keys)) >= 5);
  await new Promise((resolve) => setTimeout(resolve, 1500)); // every replica's dispatcher has looked again
  expect(await runsOf(keys)).toBe(5);
  expect(await count('SELECT COUNT(*) AS n FROM app_events_pending WHERE workspace_id = $1', [workspace])).toBe(0);
});

test('a replica killed mid-run: another fails its runs once their lease passes, their credits returned exactly; queued ones still run once', async () => {
  const workspace = 'ws-kill';
  const token = replicas[0]!.token({ workspace });
  await anyReplica()
    .client(token)
    .PUT('/api/build/workflows', {
      body: {
        kind: 'service.workflow/v1',
        slug: 'long',
        name: 'Long',
        inputs: { n: {} },
        steps: [
          { id: 'nap', kind: 'tool', tool: 'core.sleep', args: { ms: 5000 } },
          { id: 'hit', kind: 'tool', tool: 'http.request', args: { method: 'GET', url: `${targetUrl}/after-nap/{{inputs.n}}` }, after: ['nap'] },
        ],
      },
    });
  const ids: string[] = [];
  // More than a replica executes for one workspace at once (RUN_WORKERS_PER_WORKSPACE: 7): some wait queued.
  for (let n = 0; n < 10; n++) {
    const res = await anyReplica()
      .client(token)
      .POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'long' } }, body: { input: { n } } });
    ids.push(res.data!.data.run_id as string);
  }
  // Any replica may claim any run (each is woken by the queued run's NOTIFY), so the victim is one
  // that does hold some: the owner named by a running run's lease.
  let owner = '';
  await until(
    'a replica to hold runs',
    async () => {
      owner =
        ((await sql.query(`SELECT lease_owner FROM runs WHERE id = ANY($1) AND status = 'running' LIMIT 1`, [ids])).rows[0]?.lease_owner as
          | string
          | undefined) ?? '';
      return owner !== '';
    },
    10_000,
  );
  const victim = replicas.find((r) => owner.includes(`/${r.pid()}/`)) as ServerProcess;
  const pid = victim.pid();
  const held = (await sql.query(`SELECT id FROM runs WHERE id = ANY($1) AND status = 'running' AND lease_owner LIKE $2`, [ids, `%/${pid}/%`])).rows.map(
    (r) => r.id as string,
  );
  await victim.kill('SIGKILL');
  await until('every run to end', async () => (await count('SELECT COUNT(*) AS n FROM runs WHERE id = ANY($1) AND finished_at IS NULL', [ids])) === 0, 30_000);
  const rows = (await sql.query('SELECT id, status, error, credits_spent, credits_reserved FROM runs WHERE id = ANY($1)', [ids])).rows;
  // The runs the victim held failed as interrupted and never reached their second step; the rest
  // (queued when it died, or claimed by another replica) ran once.
  for (const [n, id] of ids.entries()) {
    const row = rows.find((r) => r.id === id);
    if (held.includes(id)) expect(row).toMatchObject({ status: 'failed', error: INTERRUPTED });
    expect(row.status === 'failed' ? row.error : 'succeeded').toBe(row.status === 'failed' ? INTERRUPTED : row.status);
    expect(hits.get(`/after-nap/${n}`) ?? 0).toBe(row.status === 'succeeded' ? 1 : 0);
    expect(row.credits_reserved).toBe(row.credits_spent);
  }
  expect(rows.filter((r) => r.status === 'succeeded').length).toBeGreaterThan(0);
  const spent = rows.reduce((sum, r) => sum + Number(r.credits_spent), 0);
  expect(await count('SELECT credits AS n FROM workspace_balances WHERE id = $1', [workspace])).toBe(INITIAL_CREDITS - spent);
  await victim.restart();
});

test('an event endpoint: every agent created on any replica is delivered once, by whichever replica claims it, signed with its one secret', async () => {
  const receiver = await startEventReceiver();
  try {
    const token = anyReplica().token({ workspace: 'ws-events' });
    const endpoint = await anyReplica()
      .client(token)
      .PUT('/api/build/event-endpoints', { body: { url: receiver.url, event_types: ['agent.created'], description: null } });
    expect(endpoint.response.status).toBe(201);
    receiver.secrets.push(endpoint.data!.data.secret);
    const slugs = Array.from({ length: 60 }, (_, i) => `evented-${i}`);
    for (let i = 0; i < slugs.length; i += 10) {
      await Promise.all(
        slugs.slice(i, i + 10).map((slug) =>
          anyReplica()
            .client(token)
            .PUT('/api/build/agents', { body: { ...minimalAgent(slug), slug } }),
        ),
      );
    }
    await receiver.waitFor((got) => got.length >= slugs.length, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1500)); // a second delivery of any would have come by now
    expect(receiver.received.map((e) => e.event.data.slug).sort()).toEqual([...slugs].sort());
    expect(new Set(receiver.received.map((e) => e.id)).size).toBe(slugs.length);
    expect(receiver.received.every((e) => e.verifiedWith[0] === true)).toBe(true);
  } finally {
    await receiver.close();
  }
});
