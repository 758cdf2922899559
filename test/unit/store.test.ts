// The SQLite adapter's own machinery: migrations, the group commit, the caches it keeps in memory
// (rows, lists, recent runs) checked against its tables, and its query plans. What the store does
// through its interface, on both adapters, is the store contract suite's (test/store).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, migrate, type WalSync } from '../../src/store/sqlite/database';
import { migrationsDir } from '../../src/paths';
import { createGroupCommit, type Ack } from '../../src/store/sqlite/group-commit';
import { ABANDONED_SQL, NEXT_QUEUED_SQL } from '../../src/store/sqlite/runs/queue';
import { RECENT_RUNS_BYTES } from '../../src/store/sqlite/runs/recent-runs';
import { prefixUpperBound } from '../../src/store/shared/kv';
import type { NewRun } from '../../src/store/port';
import { RowCache } from '../../src/store/shared/row-cache';
import { ListCache } from '../../src/store/shared/list-cache';
import { BudgetedMap } from '../../src/store/shared/budgeted-map';
import { storedTriggersOf } from '../../src/domain/agent';
import { createSqliteStore } from '../../src/store/sqlite';
import { StampClock } from '../../src/domain/stamps';
import type { Agent } from '../../src/domain/types';
import { minimalAgent } from '../helpers/fixtures';
import { CREATOR, WRITER } from '../store/fixtures';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-store-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const agent = (id: string, slug: string): Agent => ({ ...minimalAgent(slug), id, slug, status: 'draft', updated_at: '', reasoning_effort: null }) as Agent;

test('migrations apply once and are recorded; the file uses WAL', () => {
  const db = openDatabase(path.join(dir, 'a.db'));
  expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
  const files = fs.readdirSync(migrationsDir).filter((f) => f.endsWith('.sql')).length;
  expect(files).toBeGreaterThanOrEqual(12);
  expect(db.prepare('SELECT version FROM schema_migrations').pluck().all()).toEqual(Array.from({ length: files }, (_, i) => i + 1));
  expect(migrate(db)).toEqual([]);
  db.close();
});

test('trigger rows follow the document (a replace reads them from the document: storedTriggersOf)', async () => {
  const db = openDatabase(path.join(dir, 'c.db'));
  const store = createSqliteStore(db, new StampClock());
  const rows = () => db.prepare('SELECT id, kind, secret_prefix FROM agent_triggers WHERE agent_id = ? ORDER BY id').all('id-1');
  const hook = (id: string) => ({ kind: 'webhook' as const, id, name: id, prompt: null, enabled: true, secret_prefix: null, signing: 'none' as const });
  // The rows carry what the document says of each trigger but its signing (which the document alone keeps).
  const fromDocument = (doc: Agent) => storedTriggersOf(doc).map(({ signing: _signing, ...row }) => row);
  const created = await store.agents.create(
    'ws',
    'id-1',
    { ...agent('id-1', 'a'), triggers: [hook('t1'), hook('t2')] },
    { deriveSlug: false, limit: 10 },
    [{ triggerId: 't1', hash: 'h1', prefix: 'whk_abcd', signingSecret: null }],
    CREATOR,
  );
  if (!created.ok) throw new Error('create failed');
  expect(rows()).toEqual([
    { id: 't1', kind: 'webhook', secret_prefix: 'whk_abcd' },
    { id: 't2', kind: 'webhook', secret_prefix: null },
  ]);
  const replaced = await store.agents.replace(
    'ws',
    'id-1',
    created.record.stampMicros,
    { ...created.record.document, triggers: [hook('t2'), { ...hook('t3'), secret_prefix: 'whk_efgh' }] },
    [{ triggerId: 't3', hash: 'h3', prefix: 'whk_efgh', signingSecret: null }],
    WRITER,
  );
  if (!replaced.ok) throw new Error('replace failed');
  expect(rows()).toEqual(fromDocument(replaced.record.document));
  expect(rows().map((t) => (t as { id: string }).id)).toEqual(['t2', 't3']);
  // A replace of a version the cache holds (the one the last replace wrote).
  const again = await store.agents.replace(
    'ws',
    'id-1',
    replaced.record.stampMicros,
    { ...replaced.record.document, triggers: [replaced.record.document.triggers[1]!, hook('t4')] },
    [],
    WRITER,
  );
  if (!again.ok) throw new Error('replace failed');
  expect(rows()).toEqual(fromDocument(again.record.document));
  expect(rows().map((t) => (t as { id: string }).id)).toEqual(['t3', 't4']);
  void store.close();
});

/** The claims these tests make, as a runner would. */
const lease = { owner: 'test-runner', ms: 60_000 };

test('a run read back from memory is the row in the table after every write (accept, claim, progress, more credits, end, refusal, interrupted)', async () => {
  const file = path.join(dir, 'r.db');
  const store = createSqliteStore(openDatabase(file), new StampClock());
  const fromTable = createSqliteStore(openDatabase(file), new StampClock()); // another connection: nothing in its memory
  const run = (id: string, kind: NewRun['kind'], minimumCost: number): NewRun => ({
    id,
    kind,
    workspaceId: 'ws',
    startedBy: 'u',
    targetId: 'doc',
    targetVersion: 2,
    source: 'test',
    request: { prompt: 'p' },
    snapshotJson: JSON.stringify({ slug: 'helper', name: 'Helper', instructions: 'long' }),
    agent: kind === 'agent' ? { slug: 'helper', name: 'Helper' } : undefined,
    state: { steps: 0 },
    minimumCost,
    initialCredits: 10,
  });
  const same = async (id: string) => {
    const row = await store.runs.find(id);
    expect(row).toEqual(await fromTable.runs.find(id));
    return row!;
  };
  const now = new Date().toISOString();
  await store.runs.accept(run('agent-run', 'agent', 2), () => 'refused');
  expect(JSON.parse((await same('agent-run')).snapshot!)).toEqual({ slug: 'helper', name: 'Helper' });
  await store.runs.claim('agent-run', lease, 64);
  expect((await same('agent-run')).status).toBe('running');
  await store.runs.saveState('agent-run', () => ({ state: { steps: 3 }, spent: 3 })); // capped at what was reserved
  expect((await same('agent-run')).credits_spent).toBe(2);
  expect(await store.runs.reserveMore('agent-run', 2)).toBe(true);
  expect((await same('agent-run')).credits_reserved).toBe(4);
  await store.runs.finish('agent-run', 'succeeded', null, { steps: 3 }, 3, now);
  expect(await same('agent-run')).toMatchObject({ status: 'succeeded', credits_spent: 3, credits_reserved: 3, finished_at: now });
  await store.runs.accept(run('workflow-run', 'workflow', 3), () => 'refused');
  expect((await same('workflow-run')).snapshot).toBeNull();
  await store.runs.accept(run('refused-run', 'workflow', 5), (balance) => `only ${balance}`); // 10 - 2 - 2 + 1 back - 3
  expect(await same('refused-run')).toMatchObject({ status: 'refused', error: 'only 4' });
  await store.runs.claimNext(lease, 64);
  expect((await same('workflow-run')).status).toBe('running');
  await store.runs.recoverAbandoned('interrupted', 'the runner of a later start');
  expect(await same('workflow-run')).toMatchObject({ status: 'failed', error: 'interrupted', credits_reserved: 0 });
  // These reads came from memory: a change made behind the store's back does not show in them.
  const behind = openDatabase(file);
  behind.prepare(`UPDATE runs SET error = 'changed elsewhere'`).run();
  behind.close();
  for (const id of ['agent-run', 'workflow-run', 'refused-run']) expect((await store.runs.find(id))!.error).not.toBe('changed elsewhere');
  void fromTable.close();
  void store.close();
});

test('a run write whose group fails to commit leaves no trace in the runs kept in memory', async () => {
  const file = path.join(dir, 'f.db');
  const db = openDatabase(file);
  // A deferred foreign key is checked at COMMIT: a trigger adds an orphan row when a run starts.
  db.exec(`CREATE TABLE p (id INTEGER PRIMARY KEY);
    CREATE TABLE c (p INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED);
    CREATE TRIGGER orphan AFTER UPDATE OF status ON runs WHEN new.status = 'running' BEGIN INSERT INTO c VALUES (1); END;`);
  const store = createSqliteStore(db, new StampClock());
  await store.runs.accept(
    {
      id: 'run-1',
      kind: 'workflow',
      workspaceId: 'ws',
      startedBy: 'u',
      targetId: 'wf',
      targetVersion: 1,
      source: 'test',
      request: {},
      snapshotJson: '{}',
      state: {},
      minimumCost: 1,
      initialCredits: 5,
    },
    () => 'refused',
  );
  // (Matched by its message: better-sqlite3's error class may come from another test file's realm.)
  await expect(store.runs.claim('run-1', lease, 64)).rejects.toMatchObject({ message: expect.stringContaining('FOREIGN KEY') });
  expect(await store.runs.find('run-1')).toMatchObject({ status: 'queued', started_at: null });
  void store.close();
});

test('runs beyond the memory budget (the oldest first) are read from the table, their later writes included', async () => {
  const file = path.join(dir, 'm.db');
  const store = createSqliteStore(openDatabase(file), new StampClock());
  const state = { text: 'x'.repeat(64 * 1024) };
  const runs = Math.ceil(RECENT_RUNS_BYTES / (64 * 1024)) + 2;
  const ids = Array.from({ length: runs }, (_, i) => `run-${String(i).padStart(5, '0')}`);
  await Promise.all(
    ids.map((id) =>
      store.runs.accept(
        {
          id,
          kind: 'workflow',
          workspaceId: 'ws',
          startedBy: 'u',
          targetId: 'wf',
          targetVersion: 1,
          source: 'test',
          request: {},
          snapshotJson: '{}',
          state,
          minimumCost: 0,
          initialCredits: 0,
        },
        () => 'refused',
      ),
    ),
  );
  for (const id of [ids[0]!, ids[runs - 1]!]) {
    await store.runs.claim(id, lease, 64);
    expect(await store.runs.find(id)).toMatchObject({ status: 'running', started_at: expect.any(String) });
  }
  // Which ones memory holds: a change made behind the store's back shows only in those read from the table.
  const behind = openDatabase(file);
  behind.prepare(`UPDATE runs SET error = 'changed elsewhere'`).run();
  behind.close();
  expect((await store.runs.find(ids[0]!))!.error).toBe('changed elsewhere');
  expect((await store.runs.find(ids[1]!))!.error).toBe('changed elsewhere');
  expect((await store.runs.find(ids[runs - 1]!))!.error).toBeNull();
  void store.close();
});

test('the run queue lookups use their partial indexes, not a scan of every run', () => {
  const db = openDatabase(path.join(dir, 'q.db'));
  const plan = (sql: string, params: unknown[] = []) =>
    (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail).join('; ');
  expect(plan(NEXT_QUEUED_SQL, [{ cap: 3 }])).toBe(
    'SCAN runs USING COVERING INDEX runs_queued; LIST SUBQUERY 1; SCAN runs USING COVERING INDEX runs_running; CREATE BLOOM FILTER',
  );
  expect(plan(ABANDONED_SQL, [{ now: new Date().toISOString(), self: null }])).toBe('SCAN runs USING INDEX runs_leases');
  db.close();
});

describe('group commit with the WAL synced on the side', () => {
  /** A group commit over a fresh table, with a WalSync whose fsyncs the test completes by hand. */
  function groupOver(file: string) {
    const db = openDatabase(path.join(dir, file));
    db.exec('CREATE TABLE t (v INTEGER)');
    const waiting: ((err: Error | null) => void)[] = [];
    const syncs = { now: 0 };
    const wal: WalSync = { sync: (done) => waiting.push(done), syncNow: () => void syncs.now++, close: () => undefined };
    const commit = createGroupCommit(db, wal);
    const insert = (v: number, ack?: Ack) => commit.run(() => db.prepare('INSERT INTO t VALUES (?)').run(v), ack);
    const count = () => db.prepare('SELECT COUNT(*) FROM t').pluck().get();
    return { db, commit, waiting, syncs, insert, count };
  }
  const settled = async (p: Promise<unknown>) => {
    let state = 'pending';
    p.then(
      () => (state = 'resolved'),
      () => (state = 'rejected'),
    );
    await new Promise((resolve) => setImmediate(resolve));
    return state;
  };

  test('a durable write is acknowledged after the sync that follows its commit; a visible one at its commit', async () => {
    const { db, waiting, insert, count } = groupOver('g.db');
    const durable = insert(1);
    const visible = insert(2, 'visible');
    expect(await settled(visible)).toBe('resolved');
    expect(await settled(durable)).toBe('pending');
    expect(count()).toBe(2); // committed, not yet synced
    expect(waiting).toHaveLength(1);
    waiting.shift()!(null);
    expect(await settled(durable)).toBe('resolved');
    db.close();
  });

  test('groups that commit while a sync runs share the next one; a failed sync rejects what it covered', async () => {
    const { db, waiting, insert } = groupOver('h.db');
    const first = insert(1);
    await settled(first); // its group committed and its sync started
    const second = insert(2);
    await settled(second);
    const third = insert(3);
    await settled(third);
    expect(waiting).toHaveLength(1); // one sync at a time
    waiting.shift()!(null);
    expect(await settled(first)).toBe('resolved');
    expect(await settled(second)).toBe('pending'); // committed after that sync started
    expect(waiting).toHaveLength(1); // the next sync covers the second and third groups
    waiting.shift()!(new Error('EIO'));
    await expect(second).rejects.toThrow('the write could not be made durable: EIO');
    await expect(third).rejects.toThrow('the write could not be made durable: EIO');
    db.close();
  });

  test('drain syncs and acknowledges everything, including the groups a running fsync covers', async () => {
    const { db, commit, waiting, syncs, insert, count } = groupOver('dr.db');
    const first = insert(1);
    await new Promise((resolve) => setImmediate(resolve)); // committed; its fsync is running
    const second = insert(2); // queued, not committed
    commit.drain();
    expect(syncs.now).toBe(1);
    await expect(first).resolves.toBeDefined();
    await expect(second).resolves.toBeDefined();
    waiting.shift()!(new Error('EBADF')); // the running fsync ends after the file was closed: ignored
    expect(count()).toBe(2);
    db.close();
  });
});

test('the row cache holds at most its byte budget, dropping the least recently read rows', () => {
  const cache = new RowCache<{ id: string; workspaceId: string; slug: string; json: string }>(25);
  const row = (id: string) => ({ id, workspaceId: 'ws', slug: `s-${id}`, json: '0123456789' });
  cache.set(row('a'));
  cache.set(row('b'));
  expect(cache.get('ws', 'a')).toBeDefined(); // a is now the most recently read
  cache.set(row('c')); // 30 > 25: b goes
  expect(cache.get('ws', 'b')).toBeUndefined();
  expect(cache.idOfSlug('ws', 's-b')).toBeUndefined();
  expect(cache.idOfSlug('ws', 's-a')).toBe('a');
  expect(cache.size).toBe(2);
  cache.drop('ws', 'a');
  expect(cache.idOfSlug('ws', 's-a')).toBeUndefined();
  cache.set({ ...row('big'), json: 'x'.repeat(26) }); // larger than the budget: not kept
  expect(cache.get('ws', 'big')).toBeUndefined();
});

test('the row cache evicts from the older half first: a recently put row stays without moving, an older one moves when read', () => {
  const cache = new RowCache<{ id: string; workspaceId: string; slug: string; json: string }>(40);
  const row = (id: string) => ({ id, workspaceId: 'ws', slug: `s-${id}`, json: '0123456789' });
  for (const id of ['a', 'b', 'c', 'd']) cache.set(row(id));
  for (let i = 0; i < 100; i++) expect(cache.get('ws', 'd')?.id).toBe('d'); // newest: stays where it is
  expect(cache.get('ws', 'a')?.id).toBe('a'); // oldest: moves to the newest end
  cache.set(row('e')); // over budget: the least recently used goes, b
  expect([...'abcde'].filter((id) => cache.get('ws', id))).toEqual(['a', 'c', 'd', 'e']);
});

test('a group that fails to commit rejects every write in it and tells its rollback listeners (the row caches clear themselves)', async () => {
  const db = openDatabase(path.join(dir, 'rb.db')); // foreign keys on
  // A deferred foreign key is checked at COMMIT: an orphan row makes the group's commit fail.
  db.exec('CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE c (p INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED)');
  const commit = createGroupCommit(db);
  let rolledBack = 0;
  commit.onRollback(() => rolledBack++);
  await commit.run(() => db.prepare('INSERT INTO p VALUES (1)').run());
  expect(rolledBack).toBe(0);
  // Both settle at once: allSettled handles both rejections (an unhandled one would end the process).
  const [orphan, sibling] = await Promise.allSettled([
    commit.run(() => db.prepare('INSERT INTO c VALUES (2)').run()),
    commit.run(() => db.prepare('INSERT INTO p VALUES (3)').run()),
  ]);
  expect(orphan).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: expect.stringContaining('FOREIGN KEY') }) });
  expect(sibling).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: expect.stringContaining('FOREIGN KEY') }) });
  expect(rolledBack).toBe(1);
  expect(db.prepare('SELECT COUNT(*) FROM p').pluck().get()).toBe(1);
  expect(db.prepare('SELECT COUNT(*) FROM c').pluck().get()).toBe(0);
  db.close();
});

test('a write that fails after its first statement rolls back whole, and the writes grouped with it land', async () => {
  const db = openDatabase(path.join(dir, 'atomic.db'));
  db.exec('CREATE TABLE t (v INTEGER UNIQUE)');
  const commit = createGroupCommit(db);
  const insert = db.prepare('INSERT INTO t VALUES (?)');
  // Queued in one tick: one group. The second write's own second statement breaks UNIQUE.
  const [before, broken, after] = await Promise.allSettled([
    commit.run(() => insert.run(1)),
    commit.run(() => {
      insert.run(2);
      insert.run(1);
    }),
    commit.run(() => insert.run(3)),
  ]);
  expect(before.status).toBe('fulfilled');
  expect(broken).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: expect.stringContaining('UNIQUE') }) });
  expect(after.status).toBe('fulfilled');
  expect(db.prepare('SELECT v FROM t ORDER BY v').pluck().all()).toEqual([1, 3]);
  db.close();
});

test('a budgeted map evicts the entries set longest ago, never the one being set, and counts replaced values by their new size', () => {
  const map = new BudgetedMap<string, string>(10, (v) => v.length);
  const held = () => ['a', 'b', 'c', 'd'].filter((k) => map.get(k) !== undefined);
  map.set('a', 'aaa');
  map.set('b', 'bbb');
  map.set('c', 'ccc');
  expect(held()).toEqual(['a', 'b', 'c']); // 9 bytes
  map.set('a', 'a'); // replaced: keeps its place, now 7 bytes
  map.set('d', 'ddd'); // 10: all fit
  expect(held()).toEqual(['a', 'b', 'c', 'd']);
  map.set('b', 'bbbbbb'); // 13: the oldest other entry goes (a), then 12 (still over): c goes, b stays
  expect(held()).toEqual(['b', 'd']);
  map.set('d', 'x'.repeat(11)); // larger than the budget: not held, its old value gone
  expect(held()).toEqual(['b']);
  map.delete('b');
  map.set('c', 'x'.repeat(10)); // the whole budget is free again
  expect(held()).toEqual(['c']);
  map.clear();
  expect(held()).toEqual([]);
});

test('a list cache holds each list until it is dropped, within its byte budget (the list built longest ago goes first)', () => {
  // Each entry counts its JSON twice (the text and its encoded reply) and 256 bytes for itself:
  // a 12-character list takes 280, so a budget of 600 holds two.
  const cache = new ListCache(600);
  let builds = 0;
  const build = (json: string) => () => {
    builds++;
    return json;
  };
  const a = cache.get('ws-a', build('[1,2,3,4,55]'));
  expect(cache.get('ws-a', build('[other]'))).toBe(a); // held: not built again
  expect(builds).toBe(1);
  cache.drop('ws-a');
  expect(cache.get('ws-a', build('[1,2,3,4,66]')).json).toBe('[1,2,3,4,66]');
  cache.get('ws-b', build('[0123456789]'));
  cache.get('ws-c', build('[0123456789]')); // 3 × 280 > 600: ws-a's goes
  expect(cache.get('ws-a', build('[again]')).json).toBe('[again]');
  expect(builds).toBe(5);
  const c = cache.get('ws-c', build('[not built]'));
  const huge = `[${'9'.repeat(200)}]`;
  const big = cache.get('ws-big', build(huge)); // larger than the budget: answered, not held
  expect(big.json).toBe(huge);
  expect(cache.get('ws-big', build(huge))).not.toBe(big);
  expect(builds).toBe(7);
  expect(cache.get('ws-c', build('[not built]'))).toBe(c); // and the lists held stay
});

test('empty lists count against the list budget too', () => {
  const cache = new ListCache(1000); // an empty list takes 2 × 2 + 256 = 260: three fit
  const lists = ['w1', 'w2', 'w3', 'w4'].map((ws) => cache.get(ws, () => '[]'));
  expect(cache.get('w1', () => '[]')).not.toBe(lists[0]); // the fourth pushed the first out
  expect(cache.get('w4', () => '[]')).toBe(lists[3]);
});

// (Lists by prefix through the store, on both adapters: test/store/kv.test.ts.)
test('prefixUpperBound: the least string above every string with the prefix (past the surrogates; none for an empty or all-U+10FFFF prefix)', () => {
  expect(prefixUpperBound('a')).toBe('b');
  expect(prefixUpperBound('a\u{D7FF}')).toBe('a\u{E000}');
  expect(prefixUpperBound('a\u{10FFFF}')).toBe('b');
  expect(prefixUpperBound('\u{10FFFF}')).toBeNull();
  expect(prefixUpperBound('')).toBeNull();
});
