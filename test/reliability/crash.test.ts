// Crash durability: a server under a mixed write load (creates, replaces, deletes, test runs) is
// killed with SIGKILL at a random moment and restarted on the same database, again and again.
// Every write acknowledged before the kill must read back with its exact stamp and version; a write
// that was in flight may have landed, but only whole; a SQLite file passes integrity_check; runs cut
// off are failed with a message (with PostgreSQL once their lease passes: a restarted process is a
// new worker, and a killed one's claims are taken back only after they expire); credits are conserved.
import { openSqlite } from '../../src/sqlite-driver';
import fc from 'fast-check';
import { storeUnderTest } from '../helpers/database';
import { minimalAgent } from '../helpers/fixtures';
import { storedRows, storedValue } from '../helpers/stored';
import { INTERRUPTED } from '../../src/runtime/runner';
import { startServer, type ServerProcess } from './server';

jest.setTimeout(300_000);

const KILLS = Number(process.env.CRASH_KILLS ?? 20);
const CLIENTS = 6;
const INITIAL_CREDITS = 1_000_000;
/** PostgreSQL: the shortest run lease, so that the killed process's runs are recovered within a few seconds of each restart. */
const LEASE_SECONDS = 2;

interface Tracked {
  kind: 'agents' | 'workflows';
  ref: string;
  /** The last acknowledged state: null until the create was acknowledged. */
  acked: { version: number; stamp: string } | null;
  deleted: boolean;
  /** A write was sent and not acknowledged when the server died. */
  inFlight: 'write' | 'delete' | null;
  doc: Record<string, unknown> | null;
}

let s: ServerProcess;
const tracked: Tracked[] = [];
let serial = 0;
const rng = fc.sample(fc.integer({ min: 0, max: 1_000_000 }), { seed: 20261121, numRuns: 100_000 });
let rngAt = 0;
const random = (n: number) => (rng[rngAt++ % rng.length] as number) % n;

beforeAll(async () => {
  s = await startServer({
    DEFAULT_CREDITS: String(INITIAL_CREDITS),
    RUN_WORKERS: '4',
    ...(storeUnderTest === 'postgres' && { RUN_LEASE_SECONDS: String(LEASE_SECONDS) }),
  });
});
afterAll(() => s.dispose());

/** A run that sleeps past any kill: one is running at every kill, so that every restart has a run to recover. In a
 * workspace of its own, so that the load's queue (fairly shared between workspaces) does not hold it back. */
const NAPPER = 'napper';
const napperClient = () => s.client(s.token({ workspace: 'napper' }));
beforeAll(async () => {
  const res = await napperClient().PUT('/api/build/workflows', {
    body: { kind: 'service.workflow/v1', slug: NAPPER, name: NAPPER, steps: [{ id: 'nap', kind: 'tool', tool: 'core.sleep', args: { ms: 5000 } }] },
  });
  expect(res.response.status).toBe(201);
});

/** Starts the napper and waits until its run is running (its step under way), not merely queued. */
async function napperRunning(): Promise<void> {
  const api = napperClient();
  const started = await api.POST('/api/build/workflows/{ref}/test', { params: { path: { ref: NAPPER } }, body: {} });
  expect(started.response.status).toBe(202);
  const runId = started.data!.data.run_id;
  for (let i = 0; i < 250; i++) {
    const run = await api.GET('/api/build/workflow-runs/{runId}', { params: { path: { runId } } });
    if (run.data?.data.status === 'running') return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the napper's run ${runId} never started`);
}

function agentBody(name: string) {
  return {
    ...minimalAgent(name),
    triggers: [
      { kind: 'webhook' as const, name: 'Hook' },
      { kind: 'poll' as const, name: 'Poll', tool: 'kv.list', cron: '*/5 * * * *', timezone: 'UTC' },
    ],
  };
}

function workflowBody(slug: string) {
  return {
    kind: 'service.workflow/v1' as const,
    slug,
    name: slug,
    steps: [
      { id: 'nap', kind: 'tool' as const, tool: 'core.sleep', args: { ms: 40 } },
      { id: 'store', kind: 'tool' as const, tool: 'kv.set', args: { key: slug, value: '{{steps.nap.output}}' }, after: ['nap'] },
    ],
  };
}

/** One client: a loop of random writes on documents it owns, until the server dies. */
async function client(alive: () => boolean): Promise<void> {
  const api = s.client();
  while (alive()) {
    const mine = tracked.filter((t) => t.acked && !t.deleted && !t.inFlight);
    const action = random(6);
    try {
      if (action === 0 || mine.length === 0) {
        const kind = random(2) === 0 ? 'agents' : 'workflows';
        const ref = `doc-${++serial}`;
        const t: Tracked = { kind, ref, acked: null, deleted: false, inFlight: 'write', doc: null };
        tracked.push(t);
        const res =
          kind === 'agents'
            ? await api.PUT('/api/build/agents', { body: { ...agentBody(ref), slug: ref } })
            : await api.PUT('/api/build/workflows', { body: workflowBody(ref) });
        if (res.response.status === 201) {
          const doc = res.data!.data.document as unknown as Record<string, unknown>;
          Object.assign(t, { acked: { version: res.data!.data.version, stamp: doc.updated_at as string }, inFlight: null, doc });
        }
      } else {
        const t = mine[random(mine.length)] as Tracked;
        t.inFlight = action === 5 && t.kind === 'workflows' ? 'delete' : 'write';
        if (t.inFlight === 'delete') {
          const res = await api.DELETE('/api/build/workflows/{ref}', { params: { path: { ref: t.ref } } });
          if (res.response.status === 200) Object.assign(t, { deleted: true, inFlight: null });
        } else if (action === 4 && t.kind === 'workflows') {
          await api.POST('/api/build/workflows/{ref}/test', { params: { path: { ref: t.ref } }, body: {} });
          t.inFlight = null; // a test run is not a document write
        } else {
          const body = { ...t.doc, name: `${t.ref} v${t.acked!.version + 1}` };
          const res = await fetch(`${s.baseUrl}/api/build/${t.kind}/${t.ref}`, {
            method: 'PUT',
            headers: { authorization: `Bearer ${s.token()}`, 'content-type': 'application/json', 'if-match': `"${t.acked!.stamp}"` },
            body: JSON.stringify(body),
          });
          if (res.status === 200) {
            const result = ((await res.json()) as { data: { version: number; document: Record<string, unknown> } }).data;
            Object.assign(t, { acked: { version: result.version, stamp: result.document.updated_at as string }, inFlight: null, doc: result.document });
          } else throw new Error(`unexpected ${res.status} ${await res.text()}`);
        }
      }
    } catch (err) {
      if (alive()) throw err;
      return; // the server died under this request: it stays in flight
    }
  }
}

/** After a restart: acknowledged writes are there exactly; in-flight ones are there whole or not at all. */
async function verifyDocuments(): Promise<void> {
  for (const t of tracked) {
    const res = await fetch(`${s.baseUrl}/api/build/${t.kind}/${t.ref}`, { headers: { authorization: `Bearer ${s.token()}` } });
    if (!t.acked) {
      // The create never answered: absent, or present whole (version 1).
      if (res.status === 200) {
        const doc = ((await res.json()) as { data: Record<string, unknown> }).data;
        Object.assign(t, { acked: { version: 1, stamp: doc.updated_at as string }, doc });
      } else {
        expect(res.status).toBe(404);
        t.deleted = true;
      }
      t.inFlight = null;
      continue;
    }
    if (t.deleted) {
      expect(res.status).toBe(404);
      continue;
    }
    if (res.status === 404) {
      expect(t.inFlight).toBe('delete'); // only an unacknowledged delete may have removed it
      Object.assign(t, { deleted: true, inFlight: null });
      continue;
    }
    expect(res.status).toBe(200);
    const doc = ((await res.json()) as { data: Record<string, unknown> }).data;
    const version = await versionOf(t);
    if (doc.updated_at === t.acked.stamp) {
      expect(version).toBe(t.acked.version);
    } else {
      // Only a write that was in flight may have landed after the last acknowledgement.
      expect(t.inFlight).toBe('write');
      expect(version).toBe(t.acked.version + 1);
      Object.assign(t, { acked: { version, stamp: doc.updated_at as string }, doc });
    }
    t.inFlight = null;
  }
}

async function versionOf(t: Tracked): Promise<number> {
  return (await storedValue<number>(s, `SELECT version FROM ${t.kind} WHERE slug = ?`, [t.ref]))!;
}

/** Runs running before the restart: with SQLite the restart failed them at once; with PostgreSQL they are failed once their lease passes (and a queue poll sees it). */
async function runningBefore(restartedAt: string): Promise<number> {
  const count = () => storedValue<number>(s, `SELECT COUNT(*) FROM runs WHERE status = 'running' AND started_at < ?`, [restartedAt]);
  if (storeUnderTest === 'postgres') {
    const deadline = Date.parse(restartedAt) + LEASE_SECONDS * 1000 + 5000; // a lease, a poll (1 s) and room for a slow machine
    while ((await count()) !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  }
  return (await count())!;
}

/** Straight from the database: integrity (SQLite), documents whole with their trigger rows and secrets, runs and credits. */
async function verifyDatabase(restartedAt: string): Promise<{ interrupted: number }> {
  // A killed client cannot damage PostgreSQL's files (its server lives on); SQLite's file is written by the killed process itself.
  if (storeUnderTest === 'sqlite') {
    const db = openSqlite(s.databasePath, { readonly: true });
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      db.close();
    }
  }
  // Each agent's current version's text: SQLite keeps it in a table of its own (migration 016).
  const currentText =
    storeUnderTest === 'sqlite'
      ? 'SELECT a.id, t.document FROM agents AS a JOIN agent_versions AS v ON v.document_id = a.id AND v.version = a.version JOIN agent_version_texts AS t ON t.id = v.text_id'
      : 'SELECT a.id, v.document FROM agents AS a JOIN agent_versions AS v ON v.document_id = a.id AND v.version = a.version';
  const agents = await storedRows<{ id: string; document: string }>(s, currentText);
  for (const agent of agents) {
    const doc = JSON.parse(agent.document) as { triggers: { id: string; kind: string; secret_prefix?: string | null }[] };
    const rows = await storedRows<{ id: string; kind: string; secret_hash: string | null; secret_prefix: string | null }>(
      s,
      'SELECT id, kind, secret_hash, secret_prefix FROM agent_triggers WHERE agent_id = ? ORDER BY id',
      [agent.id],
    );
    expect(rows.map((r) => r.id)).toEqual(doc.triggers.map((t) => t.id).sort());
    for (const trigger of doc.triggers.filter((t) => t.kind === 'webhook')) {
      const row = rows.find((r) => r.id === trigger.id)!;
      expect(row.secret_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(row.secret_prefix).toBe(trigger.secret_prefix);
    }
  }
  const orphans = await storedValue(s, 'SELECT COUNT(*) FROM agent_triggers WHERE agent_id NOT IN (SELECT id FROM agents)');
  expect(orphans).toBe(0);
  // Runs that were running when the process died were finished (see runningBefore); only this life's run.
  expect(await runningBefore(restartedAt)).toBe(0);
  // Both in one statement (one snapshot: a run ending in between moves credits from one to the other); the sum as a
  // bigint, as PostgreSQL's SUM of one is a numeric, which would come back as text.
  const [{ balance, held }] = (await storedRows<{ balance: number | null; held: number }>(
    s,
    'SELECT (SELECT credits FROM workspace_balances WHERE id = ?) AS balance, CAST((SELECT COALESCE(SUM(credits_reserved), 0) FROM runs WHERE workspace_id = ?) AS BIGINT) AS held',
    ['ws-1', 'ws-1'],
  )) as [{ balance: number | null; held: number }];
  if (balance !== null) expect(balance + held).toBe(INITIAL_CREDITS);
  const failedWithMessage = (await storedValue<number>(s, 'SELECT COUNT(*) FROM runs WHERE status = ? AND error = ?', ['failed', INTERRUPTED]))!;
  return { interrupted: failedWithMessage };
}

test(`${KILLS} SIGKILLs under a mixed write load lose no acknowledged write and leave nothing half-written`, async () => {
  let interrupted = 0;
  for (let kill = 1; kill <= KILLS; kill++) {
    let alive = true;
    const clients = Array.from({ length: CLIENTS }, () => client(() => alive));
    await new Promise((resolve) => setTimeout(resolve, 150 + random(400)));
    await napperRunning();
    alive = false;
    await s.kill('SIGKILL');
    await Promise.all(clients);
    const restartedAt = new Date().toISOString();
    await s.restart();
    await verifyDocuments();
    interrupted = (await verifyDatabase(restartedAt)).interrupted;
  }
  expect(tracked.filter((t) => t.acked).length).toBeGreaterThan(KILLS);
  // The napper was running at every kill (and the load's runs sleep 40 ms a step): each restart failed at least one.
  expect(interrupted).toBeGreaterThanOrEqual(KILLS);
  process.stdout.write(`crash: ${KILLS} kills, ${tracked.length} documents tracked, ${interrupted} runs interrupted\n`);
});
