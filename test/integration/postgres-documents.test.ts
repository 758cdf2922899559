// The PostgreSQL adapter's documents, schedules, webhooks, idempotency keys and kv entries, on a
// database of their own (created on the server TEST_PG_URL names, dropped at the end). Two pools on
// that database stand for two replicas: races are run across both, and answers are compared with
// the SQLite adapter's for the same writes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { openPgDatabase, type PgDatabase } from '../../src/store/postgres/database';
import { migratePg } from '../../src/store/postgres/migrate';
import { pgAgentRepository, pgConnectionRepository, pgWorkflowRepository, pgWorkspaceRepository } from '../../src/store/postgres/documents';
import { pgScheduleRepository } from '../../src/store/postgres/schedules';
import { pgWebhookRepository } from '../../src/store/postgres/webhooks';
import { pgIdempotencyRepository } from '../../src/store/postgres/idempotency';
import { pgKvRepository } from '../../src/store/postgres/kv';
import { createSqliteStore } from '../../src/store/sqlite';
import type { SecretRow } from '../../src/store/port';
import { openDatabase, type Db } from '../../src/store/sqlite/database';
import { StampClock, formatStamp } from '../../src/domain/stamps';
import type { Agent, Workflow } from '../../src/domain/types';
import { minimalAgent } from '../helpers/fixtures';
import { createPgDatabase } from '../helpers/database';

jest.setTimeout(30_000);

const repositories = (db: PgDatabase) => ({
  agents: pgAgentRepository(db),
  workflows: pgWorkflowRepository(db),
  connections: pgConnectionRepository(db),
  workspaces: pgWorkspaceRepository(db),
  schedules: pgScheduleRepository(db),
  webhooks: pgWebhookRepository(db),
  idempotency: pgIdempotencyRepository(db),
  kv: pgKvRepository(db),
});
type Replica = ReturnType<typeof repositories>;

let database: { url: string; drop(): Promise<void> };
let dbA: PgDatabase;
let dbB: PgDatabase;
let A: Replica;
let B: Replica;
/** Replica A or B by turn, so that concurrent calls are spread over both. */
const either = (i: number) => (i % 2 === 0 ? A : B);

beforeAll(async () => {
  database = await createPgDatabase();
  dbA = openPgDatabase(database.url, { applicationName: 'replica-a' });
  dbB = openPgDatabase(database.url, { applicationName: 'replica-b' });
  await Promise.all([migratePg(dbA), migratePg(dbB)]); // replicas starting together: one applies, the other waits
  A = repositories(dbA);
  B = repositories(dbB);
});

afterAll(async () => {
  await dbA?.close();
  await dbB?.close();
  await database?.drop();
});

let n = 0;
/** A workspace of the test's own. */
const workspace = () => `ws-${++n}`;

const agent = (slug: string, more: Partial<Agent> = {}): Agent =>
  ({ ...minimalAgent(slug), id: randomUUID(), slug, status: 'draft', updated_at: '', reasoning_effort: null, ...more }) as Agent;

const workflow = (slug: string, more: Partial<Workflow> = {}): Workflow =>
  ({
    kind: 'service.workflow/v1',
    slug,
    name: slug,
    description: null,
    enabled: true,
    updated_at: '',
    space: { team: null },
    send_as: null,
    inputs: {},
    schedule: null,
    steps: [],
    output: null,
    ...more,
  }) as unknown as Workflow;

const hook = (id: string, signing: 'none' | 'standard-webhooks' = 'none') =>
  ({ kind: 'webhook', id, name: id, prompt: null, enabled: true, secret_prefix: null, signing }) as Agent['triggers'][number];
const poll = (id: string, args: Record<string, unknown> = { key: 'x' }) =>
  ({ kind: 'poll', id, name: id, prompt: null, enabled: true, tool: 'kv.get', args, cron: '*/5 * * * *', timezone: 'UTC' }) as Agent['triggers'][number];
const secret = (triggerId: string, hash: string, signingSecret: string | null = null): SecretRow => ({ triggerId, hash, prefix: `whk_${hash}`, signingSecret });

const opts = (limit = 100, deriveSlug = false) => ({ deriveSlug, limit });

async function created<T>(outcome: Promise<{ ok: true; record: T } | { ok: false }>): Promise<T> {
  const result = await outcome;
  if (!result.ok) throw new Error(`create failed: ${JSON.stringify(result)}`);
  return result.record;
}

describe('documents', () => {
  test('create, find by id (any case) or slug, in its workspace only; a ref PostgreSQL cannot hold finds nothing', async () => {
    const ws = workspace();
    const doc = agent('finder');
    const record = await created(A.agents.create(ws, doc.id, doc, opts(), []));
    expect(record).toMatchObject({ id: doc.id, workspaceId: ws, slug: 'finder', version: 1 });
    expect(record.updatedAt).toBe(formatStamp(record.stampMicros));
    expect(record.document.updated_at).toBe(record.updatedAt);
    for (const ref of [doc.id, doc.id.toUpperCase(), 'finder']) {
      const found = await B.agents.find(ws, ref);
      expect(found).toMatchObject({ id: doc.id, slug: 'finder', version: 1, stampMicros: record.stampMicros, json: record.json });
      expect(found!.document).toEqual(record.document);
    }
    expect(await B.agents.find('other-ws', doc.id)).toBeNull();
    expect(await B.agents.find(ws, 'missing')).toBeNull();
    expect(await B.agents.find(ws, 'fin\u0000der')).toBeNull();
  });

  test('a version held by a replica is answered only while the database still has it: another replica’s write, or a delete and a new document with the slug, is read at once', async () => {
    const ws = workspace();
    const doc = { ...workflow('held'), id: randomUUID() };
    const first = await created(A.workflows.create(ws, doc.id, doc, { limit: 10 }));
    const onB = await B.workflows.find(ws, 'held');
    expect(onB).toMatchObject({ version: 1, stampMicros: first.stampMicros });
    // Unchanged: the same object again (its parse and encoded reply reused), by slug and by id.
    expect(await B.workflows.find(ws, 'held')).toBe(onB);
    expect(await B.workflows.find(ws, doc.id)).toBe(onB);
    const replaced = await A.workflows.replace(ws, doc.id, first.stampMicros, { ...first.document, name: 'Changed on A' });
    expect(replaced.ok).toBe(true);
    for (const ref of ['held', doc.id]) {
      const read = await B.workflows.find(ws, ref);
      expect(read).toMatchObject({ version: 2, document: { name: 'Changed on A' } });
      expect(read).not.toBe(onB);
    }
    // Deleted on A, and a new document takes the slug: B reads the new one, never its held one.
    expect(await A.workflows.remove(ws, doc.id)).toBe(true);
    expect(await B.workflows.find(ws, doc.id)).toBeNull();
    const again = { ...workflow('held'), id: randomUUID() };
    await created(A.workflows.create(ws, again.id, again, { limit: 10 }));
    expect(await B.workflows.find(ws, 'held')).toMatchObject({ id: again.id, version: 1 });
  });

  test('an empty workspace lists []; each read is a new object, and shows the other replica’s write', async () => {
    const ws = workspace();
    const first = await A.agents.list(ws);
    expect(first.json).toBe('[]');
    expect(await A.workflows.list(ws)).toEqual({ json: '[]' });
    const doc = agent('listed');
    await created(B.agents.create(ws, doc.id, doc, opts(), []));
    const second = await A.agents.list(ws);
    expect(second).not.toBe(first);
    expect(JSON.parse(second.json)).toHaveLength(1);
    expect(await A.agents.list(ws)).not.toBe(second);
  });

  test('lists are the bytes the SQLite adapter gives for the same documents, ordered by slug', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-pg-lists-'));
    const sqliteDb: Db = openDatabase(path.join(dir, 'lists.db'));
    const sqlite = createSqliteStore(sqliteDb, new StampClock());
    try {
      const ws = workspace();
      // Names with what JSON must escape, non-ASCII, U+0000 (which PostgreSQL text cannot hold) and U+FFFD (what stands for it in the column).
      const names = ['Plain', 'Quote " and \\ back', 'Tab\tnew\nline \u0001 \u001f', 'Ünïcødé 雪 🙂', 'NUL \u0000 inside', '\ufffd kept'];
      const slugs = ['b', 'a-2', 'a', 'z9', 'a-10', 'c'];
      const stamps = new Map<string, number>();
      for (const [i, name] of names.entries()) {
        const doc = agent(slugs[i]!, { name, status: i % 2 ? 'active' : 'draft' });
        const pgRecord = await created(A.agents.create(ws, doc.id, doc, opts(), []));
        await created(sqlite.agents.create(ws, doc.id, doc, opts(), []));
        stamps.set(doc.id, pgRecord.stampMicros);
        const wf = workflow(slugs[i]!, { name, enabled: i % 3 !== 0 });
        const wfId = randomUUID();
        const pgWf = await created(A.workflows.create(ws, wfId, wf, { limit: 100 }));
        const sqliteWf = await created(sqlite.workflows.create(ws, wfId, wf, { limit: 100 }));
        let stamp = pgWf.stampMicros;
        if (i % 2) {
          // A second version, so that the lists' versions differ.
          const replaced = await A.workflows.replace(ws, wfId, pgWf.stampMicros, { ...pgWf.document, name });
          if (!replaced.ok) throw new Error('replace failed');
          stamp = replaced.record.stampMicros;
          expect((await sqlite.workflows.replace(ws, wfId, sqliteWf.stampMicros, { ...sqliteWf.document, name })).ok).toBe(true);
        }
        stamps.set(wfId, stamp);
      }
      // The SQLite rows take the PostgreSQL stamps (its list is built from the table on its first read).
      for (const table of ['agents', 'workflows']) {
        for (const [id, stamp] of stamps) sqliteDb.prepare(`UPDATE ${table} SET stamp_us = ? WHERE id = ?`).run(stamp, id);
      }
      const pgAgents = (await B.agents.list(ws)).json;
      expect(pgAgents).toBe((await sqlite.agents.list(ws)).json);
      expect(JSON.parse(pgAgents).map((item: { slug: string }) => item.slug)).toEqual(['a', 'a-10', 'a-2', 'b', 'c', 'z9']);
      expect(JSON.parse(pgAgents).find((item: { slug: string }) => item.slug === 'a-10').name).toBe('NUL \u0000 inside');
      expect((await B.workflows.list(ws)).json).toBe((await sqlite.workflows.list(ws)).json);
      expect(JSON.parse((await B.workflows.list(ws)).json)[0]).toEqual({
        slug: 'a',
        name: 'Tab\tnew\nline \u0001 \u001f',
        enabled: true,
        version: 1,
        updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
      });
      // A lone surrogate is no text either database holds (SQLite keeps invalid UTF-8, read back as
      // three U+FFFD): PostgreSQL's list shows the one U+FFFD its column holds.
      const lone = agent('lone', { name: 'Lone \ud800 surrogate' });
      await created(A.agents.create(ws, lone.id, lone, opts(), []));
      expect(JSON.parse((await B.agents.list(ws)).json).find((item: { slug: string }) => item.slug === 'lone').name).toBe('Lone \ufffd surrogate');
    } finally {
      await sqlite.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('replace is compare-and-set on the stamp: of 50 concurrent replaces from two replicas exactly one wins', async () => {
    const ws = workspace();
    const doc = agent('contested');
    const record = await created(A.agents.create(ws, doc.id, doc, opts(), []));
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) => either(i).agents.replace(ws, doc.id, record.stampMicros, { ...record.document, name: `writer ${i}` }, [])),
    );
    const winners = outcomes.filter((o) => o.ok);
    expect(winners).toHaveLength(1);
    const stored = (await B.agents.find(ws, doc.id))!;
    expect(stored.version).toBe(2);
    expect(stored.document.name).toBe(winners[0]!.ok && winners[0]!.record.document.name);
    // Every loser is told what is stored now: the winner's version.
    for (const o of outcomes) if (!o.ok) expect(o.current).toMatchObject({ version: 2, stampMicros: stored.stampMicros });
  });

  test('a replace whose UPDATE waits for another writer that then commits changes nothing and returns that writer’s version', async () => {
    const ws = workspace();
    const doc = agent('overtaken', { status: 'active', triggers: [poll(`overtaken-${n}`)] });
    const record = await created(A.agents.create(ws, doc.id, doc, opts(), []));
    const other = new pg.Client({ connectionString: database.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('UPDATE agents SET version = 2, stamp_us = stamp_us + 1, document = $2 WHERE id = $1', [doc.id, JSON.stringify({ ...record.document, name: 'other' })]);
      // The replace reads the committed row (its stamp is still the expected one), then its UPDATE waits for the row.
      const pending = B.agents.replace(ws, doc.id, record.stampMicros, { ...record.document, status: 'archived', triggers: [] }, []);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await other.query('COMMIT');
      const outcome = await pending;
      expect(outcome.ok).toBe(false);
      expect(!outcome.ok && outcome.current).toMatchObject({ version: 2, stampMicros: record.stampMicros + 1, document: { name: 'other' } });
      // Nothing of the lost write landed: the poll's schedule and trigger row are still there.
      expect((await A.schedules.ofOwner(doc.id)).map((r) => r.active)).toEqual([1]);
      expect(await dbA.rows('SELECT kind FROM agent_triggers WHERE agent_id = $1', [doc.id])).toEqual([{ kind: 'poll' }]);
    } finally {
      await other.end();
    }
  });

  test('a stale, missing or other-workspace replace returns what is stored', async () => {
    const ws = workspace();
    const doc = agent('stale');
    const record = await created(A.agents.create(ws, doc.id, doc, opts(), []));
    const first = await B.agents.replace(ws, doc.id, record.stampMicros, { ...record.document, name: 'B' }, []);
    expect(first).toMatchObject({ ok: true, record: { version: 2 } });
    const stale = await A.agents.replace(ws, doc.id, record.stampMicros, { ...record.document, name: 'C' }, []);
    expect(stale.ok).toBe(false);
    expect(!stale.ok && stale.current?.document.name).toBe('B');
    expect(await A.agents.replace('other-ws', doc.id, record.stampMicros, record.document, [])).toEqual({ ok: false, current: null });
    expect(await A.agents.replace(ws, randomUUID(), record.stampMicros, record.document, [])).toEqual({ ok: false, current: null });
  });

  test('stamps strictly increase over replaces from alternating replicas, and past a stored stamp ahead of the clock', async () => {
    const ws = workspace();
    const doc = agent('stamped');
    let record = await created(A.agents.create(ws, doc.id, doc, opts(), []));
    const before = Date.now() * 1000;
    for (let i = 0; i < 20; i++) {
      const outcome = await either(i).agents.replace(ws, doc.id, record.stampMicros, { ...record.document, name: `v${i}` }, []);
      if (!outcome.ok) throw new Error('replace failed');
      expect(outcome.record.stampMicros).toBeGreaterThan(record.stampMicros);
      expect(outcome.record.version).toBe(record.version + 1);
      expect(outcome.record.document.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      record = outcome.record;
    }
    // The database's clock (this test's server is local: within a minute of this process's).
    expect(Math.abs(record.stampMicros - before)).toBeLessThan(60_000_000);
    const ahead = record.stampMicros + 3_600_000_000;
    await dbA.count('UPDATE agents SET stamp_us = $1 WHERE id = $2', [ahead, doc.id]);
    const next = await B.agents.replace(ws, doc.id, ahead, record.document, []);
    expect(next).toMatchObject({ ok: true, record: { stampMicros: ahead + 1 } });
  });

  test('30 concurrent creates under a limit of 10 create exactly 10; the rest are limit_reached', async () => {
    const ws = workspace();
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, i) => {
        const doc = agent(`limited-${i}`);
        return either(i).agents.create(ws, doc.id, doc, opts(10), []);
      }),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(10);
    expect(outcomes.filter((o) => !o.ok && o.reason === 'limit_reached')).toHaveLength(20);
    expect(JSON.parse((await A.agents.list(ws)).json)).toHaveLength(10);
    // Workflows count apart from agents.
    expect((await B.workflows.create(ws, randomUUID(), workflow('wf'), { limit: 1 })).ok).toBe(true);
    expect(await B.workflows.create(ws, randomUUID(), workflow('wf-2'), { limit: 1 })).toEqual({ ok: false, reason: 'limit_reached' });
  });

  test('concurrent creates of one slug: one is created, the others are slug_taken (no exception)', async () => {
    const ws = workspace();
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => {
        const doc = agent('same');
        return either(i).agents.create(ws, doc.id, doc, opts(), []);
      }),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(1);
    expect(outcomes.filter((o) => !o.ok && o.reason === 'slug_taken')).toHaveLength(19);
    const workflows = await Promise.all(Array.from({ length: 10 }, (_, i) => either(i).workflows.create(ws, randomUUID(), workflow('same-wf'), { limit: 100 })));
    expect(workflows.filter((o) => o.ok)).toHaveLength(1);
    expect(workflows.filter((o) => !o.ok && o.reason === 'slug_taken')).toHaveLength(9);
  });

  test('a slug inserted past the lock is caught by the unique constraint: slug_taken, not an exception', async () => {
    const ws = workspace();
    const intruder = new pg.Client({ connectionString: database.url });
    await intruder.connect();
    try {
      await intruder.query('BEGIN');
      await intruder.query(
        `INSERT INTO agents (id, workspace_id, slug, name, status, version, stamp_us, created_at, document) VALUES ($1, $2, 'raced', 'x', 'draft', 1, 1, 'now', '{}')`,
        [randomUUID(), ws],
      );
      const doc = agent('raced');
      // This create does not see the uncommitted row; its insert waits on the unique index, then fails.
      const pending = A.agents.create(ws, doc.id, doc, opts(), []);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await intruder.query('COMMIT');
      expect(await pending).toEqual({ ok: false, reason: 'slug_taken' });
    } finally {
      await intruder.end();
    }
  });

  test('concurrent derived slugs are all distinct; a derived suffix that tips the size over is too_large', async () => {
    const ws = workspace();
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => {
        const doc = agent('helper');
        return either(i).agents.create(ws, doc.id, doc, opts(100, true), []);
      }),
    );
    const slugs = outcomes.map((o) => (o.ok ? o.record.slug : `failed: ${JSON.stringify(o)}`));
    expect(new Set(slugs)).toEqual(new Set(['helper', ...Array.from({ length: 19 }, (_, i) => `helper-${i + 2}`)]));
    const doc = agent('helper');
    const exact = Buffer.byteLength(JSON.stringify({ ...doc, slug: 'helper-21', updated_at: formatStamp(0) }));
    expect(await A.agents.create(ws, doc.id, doc, { deriveSlug: true, limit: 100, maxBytes: exact - 1 }, [])).toEqual({ ok: false, reason: 'too_large', bytes: exact });
    expect((await A.agents.create(ws, doc.id, doc, { deriveSlug: true, limit: 100, maxBytes: exact }, [])).ok).toBe(true);
  });

  test('workflow remove deletes the row and its schedule; a second remove is false', async () => {
    const ws = workspace();
    const id = randomUUID();
    const record = await created(A.workflows.create(ws, id, workflow('timed', { schedule: { cron: '0 * * * *', timezone: 'UTC' } }), { limit: 10 }));
    expect(await B.schedules.find(`workflow:${id}`)).toMatchObject({ kind: 'workflow', owner_id: id, workspace_id: ws, active: 1, next_due_at: expect.any(Number) });
    // Disabled: the row stays, inactive, without a due time.
    const disabled = await B.workflows.replace(ws, id, record.stampMicros, { ...record.document, enabled: false });
    expect(disabled.ok).toBe(true);
    expect(await A.schedules.find(`workflow:${id}`)).toMatchObject({ active: 0, next_due_at: null });
    expect(await B.workflows.remove('other-ws', id)).toBe(false);
    const removed = await Promise.all([A.workflows.remove(ws, id), B.workflows.remove(ws, id)]);
    expect(removed.sort()).toEqual([false, true]);
    expect(await A.workflows.find(ws, id)).toBeNull();
    expect(await A.schedules.find(`workflow:${id}`)).toBeNull();
  });
});

describe('agent triggers, secrets and schedules', () => {
  const TRIGGERS = 'SELECT id, agent_id, kind, secret_hash, secret_prefix, signing_secret FROM agent_triggers WHERE agent_id = $1 ORDER BY id';
  const RETIRED = 'SELECT secret_hash, trigger_id, reason FROM retired_webhook_secrets WHERE trigger_id = ANY($1) ORDER BY secret_hash';

  test('trigger rows, secrets and retired secrets follow the document as in the SQLite adapter', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-pg-triggers-'));
    const sqliteDb = openDatabase(path.join(dir, 'triggers.db'));
    const sqlite = createSqliteStore(sqliteDb, new StampClock());
    try {
      const ws = workspace();
      const tag = n;
      const t = (s: string) => `${s}-${tag}`; // trigger ids are unique across agents
      const doc = agent('hooked', { triggers: [hook(t('t1')), hook(t('t2'))] });
      const writes: [Agent['triggers'], SecretRow[]][] = [
        // t1 dropped (its secret retired), t2's secret rotated, t3 new and signing.
        [[hook(t('t2')), hook(t('t3'), 'standard-webhooks')], [secret(t('t2'), 'h2b'), secret(t('t3'), 'h3', 'whsec_3')]],
        // t3 stops signing (its key goes), a poll appears.
        [[hook(t('t2')), hook(t('t3')), poll(t('p1'))], []],
        // Rotation of t3, and t2 dropped.
        [[hook(t('t3')), poll(t('p1'))], [secret(t('t3'), 'h3b')]],
      ];
      const pgRecord = await created(A.agents.create(ws, doc.id, doc, opts(), [secret(t('t1'), 'h1'), secret(t('t2'), 'h2')]));
      const sqliteRecord = await created(sqlite.agents.create(ws, doc.id, doc, opts(), [secret(t('t1'), 'h1'), secret(t('t2'), 'h2')]));
      const ids = [t('t1'), t('t2'), t('t3'), t('p1')];
      const compare = async () => {
        const pgTriggers = await dbB.rows(TRIGGERS, [doc.id]);
        const sqliteTriggers = sqliteDb.prepare(TRIGGERS.replace('$1', '?')).all(doc.id);
        expect(pgTriggers).toEqual(sqliteTriggers);
        const sqliteRetired = sqliteDb
          .prepare(`SELECT secret_hash, trigger_id, reason FROM retired_webhook_secrets WHERE trigger_id IN (${ids.map(() => '?').join(', ')}) ORDER BY secret_hash`)
          .all(...ids);
        expect(await dbB.rows(RETIRED, [ids])).toEqual(sqliteRetired);
        return pgTriggers;
      };
      expect(await compare()).toHaveLength(2);
      let pgStamp = pgRecord.stampMicros;
      let sqliteStamp = sqliteRecord.stampMicros;
      for (const [i, [triggers, secrets]] of writes.entries()) {
        const pgOutcome = await either(i).agents.replace(ws, doc.id, pgStamp, { ...doc, triggers }, secrets);
        const sqliteOutcome = await sqlite.agents.replace(ws, doc.id, sqliteStamp, { ...doc, triggers }, secrets);
        if (!pgOutcome.ok || !sqliteOutcome.ok) throw new Error('replace failed');
        pgStamp = pgOutcome.record.stampMicros;
        sqliteStamp = sqliteOutcome.record.stampMicros;
        await compare();
      }
      // What the webhook receiver reads of it.
      expect(await A.webhooks.target(t('t3'))).toEqual({ triggerId: t('t3'), agentId: doc.id, workspaceId: ws, secretHash: 'h3b', signingSecret: null });
      expect(await A.webhooks.target(t('t1'))).toBeNull();
      expect(await A.webhooks.target(t('p1'))).toBeNull(); // not a webhook
      expect(await A.webhooks.target('t\u0000')).toBeNull();
      expect(await B.webhooks.retired(t('t1'), 'h1')).toBe('dropped');
      expect(await B.webhooks.retired(t('t2'), 'h2')).toBe('rotated');
      expect(await B.webhooks.retired(t('t2'), 'h2b')).toBe('dropped');
      expect(await B.webhooks.retired(t('t3'), 'h3')).toBe('rotated');
      expect(await B.webhooks.retired(t('t3'), 'h3b')).toBeNull();
      expect(await B.webhooks.retired(t('t2'), 'h1')).toBeNull();
    } finally {
      await sqlite.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('schedule rows follow the agent: an unchanged schedule keeps its due time, a new detector forgets the output seen', async () => {
    const ws = workspace();
    const pollId = `poll-${n}`;
    const doc = agent('polling', { status: 'active', triggers: [poll(pollId)], schedule: { cron: '0 9 * * *', timezone: 'Europe/Paris', enabled: true } as Agent['schedule'] });
    let record = await created(A.agents.create(ws, doc.id, doc, opts(), []));
    const rows = await B.schedules.ofOwner(doc.id);
    expect(rows.map((r) => [r.id, r.kind, r.active, r.trigger_id])).toEqual([
      [`agent:${doc.id}`, 'agent', 1, null],
      [`poll:${pollId}`, 'poll', 1, pollId],
    ]);
    let turn = 0;
    const replace = async (next: Agent) => {
      const outcome = await either(turn++).agents.replace(ws, doc.id, record.stampMicros, next, []);
      if (!outcome.ok) throw new Error('replace failed');
      record = outcome.record;
      return B.schedules.find(`poll:${pollId}`);
    };
    // A due time moved on by the scheduler, and an output seen: an unchanged replace keeps both.
    await dbA.count('UPDATE schedules SET next_due_at = 42, last_output_hash = $2, failures = 2 WHERE id = $1', [`poll:${pollId}`, 'seen']);
    expect(await replace({ ...record.document, name: 'renamed' })).toMatchObject({ next_due_at: 42, last_output_hash: 'seen', failures: 2 });
    // Other arguments: a new detector forgets the output and the failures (the due time depends on the cron alone).
    expect(await replace({ ...record.document, triggers: [poll(pollId, { key: 'y' })] })).toMatchObject({ next_due_at: 42, last_output_hash: null, failures: 0, active: 1 });
    // Another cron: a new due time.
    const recron = await replace({ ...record.document, triggers: [{ ...poll(pollId, { key: 'y' }), cron: '*/7 * * * *' } as Agent['triggers'][number]] });
    expect(recron!.next_due_at).toBeGreaterThan(Date.now());
    // Archived: nothing fires; the trigger gone: its row goes.
    expect(await replace({ ...record.document, status: 'archived' })).toMatchObject({ active: 0, next_due_at: null });
    await replace({ ...record.document, triggers: [] });
    expect((await A.schedules.ofOwner(doc.id)).map((r) => r.id)).toEqual([`agent:${doc.id}`]);
  });
});

describe('schedules', () => {
  test('of concurrent advances of one due time, one wins; fires and poll outcomes are recorded', async () => {
    const ws = workspace();
    const pollId = `poll-adv-${n}`;
    const doc = agent('advancing', { status: 'active', triggers: [poll(pollId)] });
    await created(A.agents.create(ws, doc.id, doc, opts(), []));
    const id = `poll:${pollId}`;
    await dbA.count('UPDATE schedules SET next_due_at = 1000 WHERE id = $1', [id]);
    expect((await B.schedules.due(1000, 10_000, 10_000)).map((r) => r.id)).toContain(id);
    expect((await B.schedules.due(999, 10_000, 10_000)).map((r) => r.id)).not.toContain(id);
    const version = await A.schedules.statusVersion(doc.id);
    const claims = await Promise.all(
      Array.from({ length: 10 }, (_, i) => either(i).schedules.advance({ id, expectedDue: 1000, next: 2000, fires: [{ dueAt: 1000, outcome: 'polling' }] })),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await B.schedules.statusVersion(doc.id)).toBe(version + 1);
    await A.schedules.recordPoll(id, 1000, { kind: 'failed', error: 'boom', retryAt: 5000 });
    expect(await B.schedules.find(id)).toMatchObject({ next_due_at: 5000, failures: 1, last_error: 'boom' });
    expect(await B.schedules.fires(id)).toEqual([{ due_at: 1000, outcome: 'failed', run_id: null, detail: 'boom' }]);
    expect(await A.schedules.advance({ id, expectedDue: 5000, next: 6000, fires: [{ dueAt: 5000, outcome: 'polling' }] })).toBe(true);
    await B.schedules.recordPoll(id, 5000, { kind: 'baseline', hash: 'h' });
    expect(await A.schedules.find(id)).toMatchObject({ next_due_at: 6000, failures: 0, last_error: null, last_output_hash: 'h' });
    expect((await A.schedules.fires(id)).map((f) => f.outcome)).toEqual(['failed', 'baseline']);
    expect(await A.schedules.statusVersion('no-such-agent')).toBe(0);
  });
});

describe('workspaces and connections', () => {
  test('a workspace starts with the initial credits, once, whichever replica asks first; set overrides', async () => {
    const ws = workspace();
    const first = await Promise.all(Array.from({ length: 10 }, (_, i) => either(i).workspaces.credits(ws, 1000 + i)));
    expect(new Set(first).size).toBe(1);
    await A.workspaces.setCredits(ws, 7);
    expect(await B.workspaces.credits(ws, 1000)).toBe(7);
    await B.workspaces.setCredits('ws-new-by-set', 3);
    expect(await A.workspaces.credits('ws-new-by-set', 1000)).toBe(3);
  });

  test('connections: an upsert replaces the one with the same ref; listed by ref', async () => {
    const ws = workspace();
    expect(await A.connections.list(ws)).toEqual([]);
    await A.connections.upsert(ws, { ref: 'main', app: 'kv', label: null, status: 'connected' });
    await B.connections.upsert(ws, { ref: 'b-other', app: 'kv', label: 'Other', status: 'connected' });
    await B.connections.upsert(ws, { ref: 'main', app: 'kv', label: 'Main', status: 'expired' });
    expect(await A.connections.list(ws)).toEqual([
      { ref: 'b-other', app: 'kv', label: 'Other', status: 'connected' },
      { ref: 'main', app: 'kv', label: 'Main', status: 'expired' },
    ]);
  });
});

describe('kv', () => {
  test('set, get, delete; prefixes are ranges (% and _ are plain), byte-ordered, limited', async () => {
    const ws = workspace();
    const keys = ['a', 'a%b', 'a_b', 'ab', 'abc', 'b', 'é', 'é2', '\u{10ffff}x', '\u{10ffff}', 'z'];
    await Promise.all(keys.map((key, i) => either(i).kv.set(ws, key, { key, i })));
    expect(await B.kv.get(ws, 'a%b')).toEqual({ key: 'a%b', i: 1 });
    expect(await B.kv.get(ws, 'missing')).toBeUndefined();
    expect(await A.kv.list(ws, '', 100)).toEqual(['a', 'a%b', 'a_b', 'ab', 'abc', 'b', 'z', 'é', 'é2', '\u{10ffff}', '\u{10ffff}x']);
    expect(await A.kv.list(ws, 'a', 100)).toEqual(['a', 'a%b', 'a_b', 'ab', 'abc']);
    expect(await A.kv.list(ws, 'a%', 100)).toEqual(['a%b']);
    expect(await A.kv.list(ws, 'a_', 100)).toEqual(['a_b']);
    expect(await A.kv.list(ws, 'ab', 1)).toEqual(['ab']);
    expect(await A.kv.list(ws, 'é', 100)).toEqual(['é', 'é2']);
    expect(await A.kv.list(ws, '\u{10ffff}', 100)).toEqual(['\u{10ffff}', '\u{10ffff}x']);
    expect(await A.kv.list('other-ws', '', 100)).toEqual([]);
    await A.kv.set(ws, 'a', [1, 2]);
    expect(await B.kv.get(ws, 'a')).toEqual([1, 2]);
    expect(await B.kv.delete(ws, 'a')).toBe(true);
    expect(await A.kv.delete(ws, 'a')).toBe(false);
    expect(await A.kv.get(ws, 'a')).toBeUndefined();
    // A key PostgreSQL text cannot hold is one no entry has.
    expect(await A.kv.get(ws, 'a\u0000')).toBeUndefined();
    expect(await A.kv.list(ws, 'a\u0000', 10)).toEqual([]);
    expect(await A.kv.delete(ws, 'a\u0000')).toBe(false);
  });
});

describe('idempotency', () => {
  const key = (k: string) => ({ workspaceId: 'ws-idem', userId: 'user-1', operation: 'create', key: k });
  const later = '2030-01-01T00:00:00.000Z';
  const reply = { status: 201, headers: { etag: '"x"' }, body: '{"ok":true}' };

  test('begin claims once (across replicas), complete stores the reply, release forgets an unanswered claim', async () => {
    const now = new Date().toISOString();
    const begins = await Promise.all(Array.from({ length: 10 }, (_, i) => either(i).idempotency.begin(key('k1'), `fp-${i}`, now, later, '2000-01-01T00:00:00.000Z')));
    const claimed = begins.flatMap((b, i) => (b.outcome === 'claimed' ? [i] : []));
    expect(claimed).toHaveLength(1);
    const owner = `fp-${claimed[0]}`;
    for (const b of begins) if (b.outcome === 'held') expect(b).toEqual({ outcome: 'held', fingerprint: owner, reply: null });
    await A.idempotency.complete(key('k1'), 'fp-other', reply); // not the claim's request: nothing stored
    expect(await B.idempotency.begin(key('k1'), 'fp-x', now, later, '2000-01-01T00:00:00.000Z')).toEqual({ outcome: 'held', fingerprint: owner, reply: null });
    await B.idempotency.complete(key('k1'), owner, reply);
    expect(await A.idempotency.begin(key('k1'), 'fp-x', now, later, '2000-01-01T00:00:00.000Z')).toEqual({ outcome: 'held', fingerprint: owner, reply });
    await A.idempotency.release(key('k1'), owner); // answered: stays
    expect((await B.idempotency.begin(key('k1'), 'fp-x', now, later, '2000-01-01T00:00:00.000Z')).outcome).toBe('held');
    // Expired (created before `expiredBefore`): claimed anew.
    expect(await B.idempotency.begin(key('k1'), 'fp-new', now, later, '2100-01-01T00:00:00.000Z')).toEqual({ outcome: 'claimed' });

    expect(await A.idempotency.begin(key('k2'), 'fp', now, later, '2000-01-01T00:00:00.000Z')).toEqual({ outcome: 'claimed' });
    await B.idempotency.release(key('k2'), 'fp');
    expect(await A.idempotency.begin(key('k2'), 'fp-2', now, later, '2000-01-01T00:00:00.000Z')).toEqual({ outcome: 'claimed' });
    // Died in flight (locked_until passed, no reply): taken over.
    expect(await B.idempotency.begin(key('k2'), 'fp-3', '2031-01-01T00:00:00.000Z', '2031-01-01T00:01:00.000Z', '2000-01-01T00:00:00.000Z')).toEqual({
      outcome: 'claimed',
    });
  });

  test('prune deletes at most `limit` keys created before the time', async () => {
    const old = '2001-01-01T00:00:00.000Z';
    for (let i = 0; i < 5; i++) await either(i).idempotency.begin({ ...key(`old-${i}`), workspaceId: 'ws-prune' }, 'fp', old, old, '2000-01-01T00:00:00.000Z');
    await A.idempotency.begin({ ...key('new'), workspaceId: 'ws-prune' }, 'fp', '2002-01-01T00:00:00.000Z', later, '2000-01-01T00:00:00.000Z');
    expect(await A.idempotency.prune('2002-01-01T00:00:00.000Z', 3)).toBe(3);
    expect(await B.idempotency.prune('2002-01-01T00:00:00.000Z', 3)).toBe(2);
    expect(await B.idempotency.prune('2002-01-01T00:00:00.000Z', 3)).toBe(0);
    expect(await dbA.rows(`SELECT key FROM idempotency_keys WHERE workspace_id = 'ws-prune'`)).toEqual([{ key: 'new' }]);
  });
});

describe('webhooks', () => {
  test('deliveries are found by key since a time, and pruned at most `limit` at a time', async () => {
    const trigger = `deliveries-${n}`;
    for (let i = 0; i < 4; i++) {
      await dbA.count('INSERT INTO webhook_deliveries (trigger_id, delivery_key, run_id, http_status, received_at) VALUES ($1, $2, $3, 202, $4)', [
        trigger,
        `d${i}`,
        `run-${i}`,
        `2001-01-0${i + 1}T00:00:00.000Z`,
      ]);
    }
    expect(await B.webhooks.delivery(trigger, 'd1', '2001-01-01T00:00:00.000Z')).toEqual({ runId: 'run-1', httpStatus: 202 });
    expect(await B.webhooks.delivery(trigger, 'd1', '2001-01-03T00:00:00.000Z')).toBeNull();
    expect(await B.webhooks.delivery(trigger, 'd\u0000', '2001-01-01T00:00:00.000Z')).toBeNull();
    expect(await A.webhooks.pruneDeliveries('2001-01-04T00:00:00.000Z', 2)).toBe(2);
    expect(await B.webhooks.pruneDeliveries('2001-01-04T00:00:00.000Z', 2)).toBe(1);
    expect(await dbA.rows('SELECT delivery_key FROM webhook_deliveries WHERE trigger_id = $1', [trigger])).toEqual([{ delivery_key: 'd3' }]);
  });
});
