// The PostgreSQL adapter's runs on a database of their own (created on the server TEST_PG_URL
// names, dropped at the end). Two pools with a listener each stand for two replicas: the queue's
// claims, leases, credits, webhook de-duplication, cancels, decisions and event numbering are raced
// across both, and each replica hears the other's writes through LISTEN/NOTIFY. One run's whole
// life is compared with the SQLite adapter's for the same calls.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openPgDatabase, type PgDatabase } from '../../src/store/postgres/database';
import { migratePg } from '../../src/store/postgres/migrate';
import { pgRunRepository } from '../../src/store/postgres/runs';
import { listenForNotifications, type Notifications } from '../../src/store/postgres/notifications';
import { APPROVAL_EXPIRED, type Lease, type NewRun, type RunRepository } from '../../src/store/port';
import { FINAL_EVENT } from '../../src/store/port';
import { createSqliteStore } from '../../src/store/sqlite';
import { openDatabase } from '../../src/store/sqlite/database';
import { StampClock } from '../../src/domain/stamps';
import { createPgDatabase } from '../helpers/database';

jest.setTimeout(60_000);

interface Replica {
  db: PgDatabase;
  notifications: Notifications;
  runs: RunRepository;
  queued: number;
  events: string[];
}

let database: { url: string; drop(): Promise<void> };
let A: Replica;
let B: Replica;
/** Replica A or B by turn, so that concurrent calls are spread over both. */
const either = (i: number) => (i % 2 === 0 ? A : B);

async function replica(name: string, eventsLimit?: number): Promise<Replica> {
  const db = openPgDatabase(database.url, { applicationName: name });
  const notifications = listenForNotifications(database.url, { firstRetryMs: 50, maxRetryMs: 500 });
  const r: Replica = { db, notifications, runs: pgRunRepository(db, notifications, eventsLimit), queued: 0, events: [] };
  r.runs.onQueued(() => r.queued++);
  r.runs.onEvents((id) => r.events.push(id));
  await until(() => r.queued > 0); // the listener's first connection says "look again": it listens now
  return r;
}

beforeAll(async () => {
  database = await createPgDatabase();
  const setup = openPgDatabase(database.url);
  await migratePg(setup);
  await setup.close();
  A = await replica('replica-a');
  B = await replica('replica-b');
});

afterAll(async () => {
  for (const r of [A, B]) {
    await r?.notifications.close();
    await r?.db.close();
  }
  await database?.drop();
});

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not true within ${timeoutMs} ms: ${condition.toString()}`);
    await sleep(10);
  }
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let counter = 0;
/** A new workspace id per test, so balances do not mix. */
const workspace = () => `ws-${++counter}`;
const newRun = (id: string, o: Partial<NewRun> = {}): NewRun => ({
  id,
  kind: 'workflow',
  workspaceId: 'ws',
  startedBy: 'user-1',
  targetId: 'wf-1',
  targetVersion: 1,
  source: 'test',
  request: { input: {} },
  snapshotJson: '{"kind":"service.workflow/v1","slug":"wf","steps":[]}',
  state: { step: 0 },
  minimumCost: 1,
  initialCredits: 1000,
  ...o,
});
const queue = async (r: Replica, run: NewRun) => expect(await r.runs.accept(run, (b) => `only ${b}`)).toEqual({ status: 'queued' });
const balance = async (ws: string) => (await A.db.row<{ credits: number }>('SELECT credits FROM workspaces WHERE id = $1', [ws]))!.credits;
const seqs = async (id: string) => (await A.runs.events(id, 0, 10_000)).map((e) => e.seq);
const types = async (id: string) => (await A.runs.events(id, 0, 10_000)).map((e) => e.type);
const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const lease = (owner: string, ms = 600_000): Lease => ({ owner, ms });
const now = () => new Date().toISOString();

describe('the queue', () => {
  test('300 queued runs claimed by 2×8 concurrent claimers: each exactly once, each numbered queued, started', async () => {
    const ws = [workspace(), workspace(), workspace()];
    const ids = range(300).map((i) => `q-${String(i).padStart(4, '0')}`);
    for (const [i, id] of ids.entries()) await queue(either(i), newRun(id, { workspaceId: ws[i % 3]! }));
    const claimed: string[] = [];
    const claimer = async (r: Replica, owner: string) => {
      for (let row = await r.runs.claimNext(lease(owner), 1000); row; row = await r.runs.claimNext(lease(owner), 1000)) {
        expect(row).toMatchObject({ status: 'running', snapshot: expect.stringContaining('service.workflow/v1'), started_at: expect.any(String) });
        expect(row).not.toHaveProperty('lease_expires_at');
        claimed.push(row.id);
      }
    };
    await Promise.all([...range(8).map((i) => claimer(A, `a-${i}`)), ...range(8).map((i) => claimer(B, `b-${i}`))]);
    expect(claimed.length).toBe(300);
    expect([...new Set(claimed)].sort()).toEqual(ids);
    const owners = await A.db.rows<{ n: number }>(`SELECT COUNT(DISTINCT lease_owner) AS n FROM runs WHERE id = ANY($1) AND status = 'running' AND lease_expires_at > now()`, [ids]);
    expect(owners[0]!.n).toBeGreaterThan(1); // spread over the claimers, all leased
    for (const id of ids.slice(0, 20)) expect(await types(id)).toEqual(['run.queued', 'run.started']);
    await A.db.count(`UPDATE runs SET status = 'succeeded', finished_at = $2, lease_owner = NULL, lease_expires_at = NULL WHERE id = ANY($1)`, [ids, now()]);
  });

  test('the oldest first; a workspace at its cap waits; claim(id) is conditional on queued and the cap', async () => {
    const [busy, other] = [workspace(), workspace()];
    await queue(A, newRun('cap-1', { workspaceId: busy }));
    await queue(B, newRun('cap-2', { workspaceId: busy }));
    await queue(A, newRun('cap-3', { workspaceId: busy }));
    await queue(B, newRun('cap-4', { workspaceId: other }));
    await A.db.count(`UPDATE runs SET status = 'cancelled' WHERE status = 'queued' AND id NOT LIKE 'cap-%'`); // earlier tests' leftovers
    expect((await A.runs.claimNext(lease('a'), 2))!.id).toBe('cap-1');
    expect((await B.runs.claimNext(lease('b'), 2))!.id).toBe('cap-2');
    expect((await A.runs.claimNext(lease('a'), 2))!.id).toBe('cap-4'); // busy has 2 running
    expect(await B.runs.claimNext(lease('b'), 2)).toBeNull();
    expect(await B.runs.claim('cap-3', lease('b'), 2)).toBe(false); // the cap
    expect(await B.runs.claim('cap-1', lease('b'), 9)).toBe(false); // not queued
    expect(await B.runs.claim('cap-3', lease('b'), 3)).toBe(true);
    expect(await A.runs.claim('cap-3', lease('a'), 3)).toBe(false);
    expect(await A.runs.find('cap-3')).toMatchObject({ status: 'running', started_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) });
    expect((await A.db.row<{ lease_owner: string }>('SELECT lease_owner FROM runs WHERE id = $1', ['cap-3']))!.lease_owner).toBe('b');
  });

  test('a claim by id racing claimNext on the other replica: one of them gets the run', async () => {
    const ws = workspace();
    const ids = range(40).map((i) => `race-claim-${i}`);
    for (const id of ids) await queue(A, newRun(id, { workspaceId: ws }));
    const results = await Promise.all(ids.map(async (id) => [await A.runs.claim(id, lease('a'), 1000), await B.runs.claimNext(lease('b'), 1000)] as const));
    const byId = ids.filter((_, i) => results[i]![0]);
    const byNext = results.map(([, row]) => row?.id).filter((id): id is string => !!id && id.startsWith('race-claim-'));
    expect(byId.filter((id) => byNext.includes(id))).toEqual([]);
    for (const id of [...byId, ...byNext]) expect(await types(id)).toEqual(['run.queued', 'run.started']);
  });
});

describe('leases', () => {
  test('an expired lease is recovered once by the other replica, with the message and the refund; a live one is not', async () => {
    const ws = workspace();
    await queue(A, newRun('expired', { workspaceId: ws, minimumCost: 5, initialCredits: 20 }));
    await queue(A, newRun('live', { workspaceId: ws, minimumCost: 5 }));
    expect(await A.runs.claim('expired', lease('a-short', 150), 10)).toBe(true);
    expect(await A.runs.claim('live', lease('a-long'), 10)).toBe(true);
    expect(await A.runs.saveState('expired', () => ({ state: { step: 1 }, spent: 2 }))).toBe('saved');
    await sleep(300);
    const [first, second] = await Promise.all([B.runs.recoverAbandoned('abandoned', 'b'), A.runs.recoverAbandoned('abandoned', 'a')]);
    expect(first + second).toBe(1);
    expect(await B.runs.recoverAbandoned('abandoned', 'b')).toBe(0);
    expect(await A.runs.find('expired')).toMatchObject({ status: 'failed', error: 'abandoned', credits_reserved: 2, credits_spent: 2, finished_at: expect.any(String) });
    expect(await A.runs.find('live')).toMatchObject({ status: 'running' });
    expect(await balance(ws)).toBe(20 - 2 - 5); // 3 of the 5 came back; the live run keeps its 5
    expect(await types('expired')).toEqual(['run.queued', 'run.started', FINAL_EVENT]);
    // The worker, unaware, goes on: none of it lands.
    expect(await A.runs.renewLeases(lease('a-short'), ['expired'])).toEqual([]);
    expect(await A.runs.saveState('expired', () => ({ state: { step: 2 }, spent: 3 }))).toBe('not_running');
    expect(await A.runs.reserveMore('expired', 1)).toBe(false);
    expect(await A.runs.finish('expired', 'succeeded', null, {}, 4, now())).toBe(false);
    expect(await balance(ws)).toBe(13);
    expect(await A.db.row('SELECT lease_owner, lease_expires_at FROM runs WHERE id = $1', ['expired'])).toEqual({ lease_owner: null, lease_expires_at: null });
  });

  test('recovery racing the worker’s end: one of them ends the run, refunded once', async () => {
    const ws = workspace();
    const ids = range(30).map((i) => `recover-race-${i}`);
    for (const id of ids) {
      await queue(A, newRun(id, { workspaceId: ws, minimumCost: 4, initialCredits: 200 }));
      expect(await A.runs.claim(id, lease('a-dying', 50), 100)).toBe(true);
    }
    await sleep(150);
    const [finished, recovered] = await Promise.all([
      Promise.all(ids.map((id) => A.runs.finish(id, 'succeeded', null, { done: true }, 1, now()))),
      Promise.all(range(5).map(() => B.runs.recoverAbandoned('abandoned', 'b'))),
    ]);
    const recoveredCount = recovered.reduce((a, b) => a + b, 0);
    expect(finished.filter(Boolean).length + recoveredCount).toBe(30);
    for (const [i, id] of ids.entries()) {
      const run = (await A.runs.find(id))!;
      expect(run.status).toBe(finished[i] ? 'succeeded' : 'failed');
      expect((await types(id)).filter((t) => t === FINAL_EVENT)).toHaveLength(1);
    }
    // Each finished run spent 1 of its 4; each recovered one spent nothing.
    expect(await balance(ws)).toBe(200 - finished.filter(Boolean).length);
  });

  test('renewLeases extends and returns only the runs the owner still holds', async () => {
    const ws = workspace();
    for (const id of ['renew-1', 'renew-2', 'renew-3']) await queue(A, newRun(id, { workspaceId: ws }));
    await A.runs.claim('renew-1', lease('renew-a', 1000), 10);
    await A.runs.claim('renew-2', lease('renew-a', 1000), 10);
    await B.runs.claim('renew-3', lease('renew-b', 1000), 10);
    expect(await A.runs.finish('renew-2', 'succeeded', null, {}, 0, now())).toBe(true);
    const before = await A.db.row<{ at: Date }>('SELECT lease_expires_at AS at FROM runs WHERE id = $1', ['renew-1']);
    const held = await B.runs.renewLeases(lease('renew-a', 120_000), ['renew-1', 'renew-2', 'renew-3', 'missing']);
    expect(held).toEqual(['renew-1']);
    const after = await A.db.row<{ at: Date; owner: string }>('SELECT lease_expires_at AS at, lease_owner AS owner FROM runs WHERE id = $1', ['renew-1']);
    expect(after!.at.getTime() - before!.at.getTime()).toBeGreaterThan(100_000);
    expect(await B.runs.renewLeases(lease('renew-a', 1000), [])).toEqual([]);
    expect((await A.runs.releaseAll('renew-a', 'done')) + (await A.runs.releaseAll('renew-b', 'done'))).toBe(2);
  });

  test('releaseAll fails the runs one owner holds, refunded, and leaves the others', async () => {
    const ws = workspace();
    for (const id of ['release-1', 'release-2', 'release-3']) await queue(A, newRun(id, { workspaceId: ws, minimumCost: 3, initialCredits: 30 }));
    await A.runs.claim('release-1', lease('a-stopping'), 10);
    await A.runs.claim('release-2', lease('a-stopping'), 10);
    await B.runs.claim('release-3', lease('b'), 10);
    await A.runs.saveState('release-1', () => ({ state: {}, spent: 1 }));
    expect(await A.runs.releaseAll('a-stopping', 'shut down')).toBe(2);
    expect(await A.runs.releaseAll('a-stopping', 'shut down')).toBe(0);
    expect(await A.runs.find('release-1')).toMatchObject({ status: 'failed', error: 'shut down', credits_reserved: 1 });
    expect(await A.runs.find('release-3')).toMatchObject({ status: 'running' });
    expect(await balance(ws)).toBe(30 - 1 - 3);
  });
});

describe('credits', () => {
  test('exact after concurrent reservations and ends on both replicas: balance + spent == initial, never negative', async () => {
    const ws = workspace();
    const initial = 100;
    const ids = range(20).map((i) => `credit-${i}`);
    for (const [i, id] of ids.entries()) await queue(either(i), newRun(id, { workspaceId: ws, minimumCost: 3, initialCredits: initial }));
    expect(await balance(ws)).toBe(40);
    expect(await A.runs.accept(newRun('credit-refused', { workspaceId: ws, minimumCost: 41 }), (b) => `only ${b}`)).toEqual({ status: 'refused', balance: 40 });
    expect(await A.runs.find('credit-refused')).toMatchObject({ status: 'refused', error: 'only 40', credits_reserved: 0, finished_at: expect.any(String) });
    for (const [i, id] of ids.entries()) expect(await either(i).runs.claim(id, lease('w'), 100)).toBe(true);
    // 20 runs × 5 more each, asked for at once on both replicas: the 40 left cover exactly 40 of them.
    const more = await Promise.all(ids.flatMap((id, i) => range(5).map((k) => either(i + k).runs.reserveMore(id, 1))));
    expect(more.filter(Boolean).length).toBe(40);
    expect(await balance(ws)).toBe(0);
    const reserved = new Map<string, number>();
    for (const id of ids) reserved.set(id, (await A.runs.find(id))!.credits_reserved);
    // Each spends a different amount, some more than it reserved (capped), and ends.
    const spends = ids.map((_, i) => i % 9);
    await Promise.all(ids.map((id, i) => either(i + 1).runs.finish(id, 'succeeded', null, {}, spends[i]!, now())));
    const spent = ids.map((id, i) => Math.min(spends[i]!, reserved.get(id)!));
    expect(await balance(ws)).toBe(initial - spent.reduce((a, b) => a + b, 0));
    const rows = await A.db.rows<{ spent: number; reserved: number }>('SELECT credits_spent AS spent, credits_reserved AS reserved FROM runs WHERE workspace_id = $1', [ws]);
    expect(rows.every((r) => r.spent === r.reserved)).toBe(true);
    expect((await balance(ws)) + rows.reduce((a, r) => a + r.spent, 0)).toBe(initial);
  });
});

describe('accept', () => {
  test('concurrent deliveries of one webhook key on two replicas: one run, the others repeated with its id and reply', async () => {
    const ws = workspace();
    const since = new Date(Date.now() - 60_000).toISOString();
    const deliveries = range(12).map((i) =>
      either(i).runs.accept(newRun(`delivery-${i}`, { workspaceId: ws, source: 'webhook', triggerId: 'trigger-1', delivery: { key: 'msg-1', since }, minimumCost: 2 }), () => 'refused'),
    );
    const outcomes = await Promise.all(deliveries);
    const queued = outcomes.filter((o) => o.status === 'queued');
    expect(queued).toHaveLength(1);
    const winner = `delivery-${outcomes.findIndex((o) => o.status === 'queued') + 1}`;
    for (const o of outcomes) if (o.status !== 'queued') expect(o).toEqual({ status: 'repeated', runId: winner, httpStatus: 202 });
    expect((await A.db.rows('SELECT id FROM runs WHERE trigger_id = $1', ['trigger-1'])).length).toBe(1);
    expect(await balance(ws)).toBe(998);
    // Past the repeat window, the key starts a run again.
    const later = await B.runs.accept(newRun('delivery-later', { workspaceId: ws, triggerId: 'trigger-1', delivery: { key: 'msg-1', since: new Date(Date.now() + 1000).toISOString() } }), () => 'refused');
    expect(later).toEqual({ status: 'queued' });
    expect((await A.runs.lastStartedBy(['trigger-1', 'trigger-none'])).get('trigger-1')).toEqual(expect.any(String));
    expect((await A.runs.lastStartedBy(['trigger-none'])).size).toBe(0);
  });

  test('the trigger’s rate is counted in the accept, exactly, across replicas: past the limit nothing is written; copies of one delivery count once', async () => {
    const ws = workspace();
    const since = new Date(Date.now() - 60_000).toISOString();
    const rate = { window: 100, limit: 25 };
    // 10 copies of one delivery, then 40 distinct ones, all at once on both replicas.
    const copies = range(10).map((i) => newRun(`copy-${i}`, { workspaceId: ws, triggerId: 'rated', delivery: { key: 'same', since }, rate }));
    const distinct = range(40).map((i) => newRun(`distinct-${i}`, { workspaceId: ws, triggerId: 'rated', delivery: { key: `d${i}`, since }, rate }));
    const outcomes = await Promise.all([...copies, ...distinct].map((run, i) => either(i).runs.accept(run, () => 'refused')));
    const copyOutcomes = outcomes.slice(0, 10).map((o) => o.status);
    // The copies start one run (or none, when the distinct ones spent the rate first) and spend at most one slot.
    expect(copyOutcomes.filter((st) => st === 'queued').length).toBeLessThanOrEqual(1);
    expect(outcomes.filter((o) => o.status === 'queued')).toHaveLength(25);
    expect(outcomes.filter((o) => o.status === 'rate_limited').length).toBe(50 - 25 - copyOutcomes.filter((st) => st === 'repeated').length);
    expect((await A.db.rows('SELECT id FROM runs WHERE trigger_id = $1', ['rated'])).length).toBe(25);
    // A limited delivery left no row: sent again in the next window, it starts a run.
    expect((await A.db.rows('SELECT delivery_key FROM webhook_deliveries WHERE trigger_id = $1', ['rated'])).length).toBe(25);
    const limited = distinct.find((_, i) => outcomes[10 + i]!.status === 'rate_limited')!;
    expect(await B.runs.accept({ ...limited, id: 'next-window', rate: { window: 101, limit: 25 } }, () => 'refused')).toEqual({ status: 'queued' });
    expect(await A.db.rows('SELECT window_start, count FROM trigger_rate_windows WHERE trigger_id = $1', ['rated'])).toEqual([{ window_start: 101, count: 1 }]);
  });

  test('a refused delivery is replied 409 to its repeats', async () => {
    const ws = workspace();
    const since = new Date(Date.now() - 60_000).toISOString();
    const delivery = (id: string) => newRun(id, { workspaceId: ws, triggerId: 'trigger-2', delivery: { key: 'k', since }, minimumCost: 5, initialCredits: 1 });
    expect(await A.runs.accept(delivery('refused-1'), (b) => `only ${b}`)).toEqual({ status: 'refused', balance: 1 });
    expect(await B.runs.accept(delivery('refused-2'), (b) => `only ${b}`)).toEqual({ status: 'repeated', runId: 'refused-1', httpStatus: 409 });
    expect(await types('refused-1')).toEqual([FINAL_EVENT]);
  });

  test('a schedule’s due time fired by two replicas at once starts one run', async () => {
    const ws = workspace();
    await A.db.count(
      `INSERT INTO schedules (id, kind, workspace_id, owner_id, cron, timezone, active, next_due_at) VALUES ('agent:s1', 'agent', $1, 'agent-1', '* * * * *', 'UTC', 1, 1000)`,
      [ws],
    );
    const fire = { kind: 'schedule' as const, claim: { id: 'agent:s1', expectedDue: 1000, next: 61_000, fires: [] }, dueAt: 1000 };
    const outcomes = await Promise.all(['fire-a', 'fire-b'].map((id, i) => either(i).runs.accept(newRun(id, { workspaceId: ws, kind: 'agent', source: 'schedule', fire }), () => 'refused')));
    expect(outcomes.map((o) => o.status).sort()).toEqual(['queued', 'raced']);
    const fired = await A.db.rows<{ outcome: string; run_id: string }>('SELECT outcome, run_id FROM schedule_fires WHERE schedule_id = $1', ['agent:s1']);
    expect(fired).toEqual([{ outcome: 'fired', run_id: outcomes[0]!.status === 'queued' ? 'fire-a' : 'fire-b' }]);
  });

  test('find shows the projection: the agent’s slug and name, no documents; claimNext gives the documents', async () => {
    const ws = workspace();
    await queue(A, newRun('projected', { workspaceId: ws, kind: 'agent', snapshotJson: '{"slug":"helper","name":"Helper","instructions":"…"}', stepAgentsJson: '{}', agent: { slug: 'helper', name: 'Helper' } }));
    const found = (await B.runs.find('projected'))!;
    expect(JSON.parse(found.snapshot!)).toEqual({ slug: 'helper', name: 'Helper' });
    expect(found).toMatchObject({ id: 'projected', kind: 'agent', workspace_id: ws, status: 'queued', step_agents: null, target_version: 1, credits_reserved: 1, credits_spent: 0 });
    expect(Object.keys(found).sort()).toEqual(
      ['id', 'kind', 'workspace_id', 'started_by', 'target_id', 'target_version', 'status', 'source', 'trigger_id', 'request', 'snapshot', 'step_agents', 'state']
        .concat(['credits_reserved', 'credits_spent', 'error', 'accepted_at', 'started_at', 'finished_at', 'cancel_requested_at', 'cancelled_by', 'approval_expires_at'])
        .sort(),
    );
    expect(await A.runs.find('nothing')).toBeNull();
  });
});

describe('cancel and decide', () => {
  /** A running run parked with these held calls. */
  async function parked(id: string, ws: string, calls: string[], expiresAt = new Date(Date.now() + 60_000).toISOString()) {
    await queue(A, newRun(id, { workspaceId: ws, kind: 'agent', minimumCost: 2, initialCredits: 100 }));
    expect(await A.runs.claim(id, lease('a'), 100)).toBe(true);
    const state = { tool_calls: calls.map((c) => ({ id: c, status: 'awaiting_approval' })) };
    const calls_ = calls.map((c) => ({ id: c, tool: 'kv.delete' }));
    expect(await A.runs.park(id, { state, spent: 1, calls: calls_, expiresAt, events: [{ type: 'step', data: {} }] }, now())).toBe('parked');
  }

  test('cancel racing finish on the other replica: one outcome, refunded once', async () => {
    const ws = workspace();
    const ids = range(20).map((i) => `cancel-race-${i}`);
    for (const id of ids) {
      await queue(A, newRun(id, { workspaceId: ws, minimumCost: 3, initialCredits: 100 }));
      await A.runs.claim(id, lease('a'), 100);
    }
    const [cancels, finishes] = await Promise.all([
      Promise.all(ids.map((id) => B.runs.cancel(id, 'user-2', now()))),
      Promise.all(ids.map((id) => A.runs.finish(id, 'succeeded', null, {}, 1, now()))),
    ]);
    expect(finishes.every(Boolean)).toBe(true); // a cancel only asks a running run to stop
    for (const [i, id] of ids.entries()) {
      expect(['requested', 'finished']).toContain(cancels[i]!.outcome);
      const run = (await A.runs.find(id))!;
      // The run ended first: the late cancel leaves no trace.
      expect(run).toMatchObject({ status: 'succeeded', cancel_requested_at: null, cancelled_by: null });
      expect((await types(id)).filter((t) => t === FINAL_EVENT)).toHaveLength(1);
    }
    expect(await balance(ws)).toBe(100 - 20);
  });

  test('cancel racing a claim of a queued run: cancelled or claimed, never both', async () => {
    const ws = workspace();
    const ids = range(30).map((i) => `cancel-claim-${i}`);
    for (const id of ids) await queue(A, newRun(id, { workspaceId: ws, minimumCost: 2, initialCredits: 100 }));
    const [cancels, claims] = await Promise.all([
      Promise.all(ids.map((id) => B.runs.cancel(id, 'user-2', now()))),
      Promise.all(ids.map((id) => A.runs.claim(id, lease('a'), 100))),
    ]);
    for (const [i, id] of ids.entries()) {
      const run = (await A.runs.find(id))!;
      if (claims[i]) {
        expect(cancels[i]).toEqual({ outcome: 'requested' });
        expect(run).toMatchObject({ status: 'running', cancelled_by: 'user-2' });
        expect(await types(id)).toEqual(['run.queued', 'run.started', 'run.cancel_requested']);
      } else {
        expect(cancels[i]).toEqual({ outcome: 'cancelled' });
        expect(run).toMatchObject({ status: 'cancelled', credits_reserved: 0 });
        expect(await types(id)).toEqual(['run.queued', FINAL_EVENT]);
      }
    }
    const cancelled = claims.filter((c) => !c).length;
    expect(await balance(ws)).toBe(100 - 2 * (30 - cancelled));
    expect(await B.runs.cancel('missing', 'u', now())).toEqual({ outcome: 'missing' });
  });

  test('a running run asked to stop: saveState says so, park does not park it', async () => {
    const ws = workspace();
    await queue(A, newRun('stop-me', { workspaceId: ws, minimumCost: 2 }));
    await A.runs.claim('stop-me', lease('a'), 10);
    expect(await B.runs.cancel('stop-me', 'user-2', now())).toEqual({ outcome: 'requested' });
    expect(await B.runs.cancel('stop-me', 'user-3', now())).toEqual({ outcome: 'requested' });
    expect(await A.runs.saveState('stop-me', () => ({ state: {}, spent: 1 }))).toBe('cancel_requested');
    const parking = { state: {}, spent: 1, calls: [{ id: 'c', tool: 't' }], expiresAt: now(), events: [] };
    expect(await A.runs.park('stop-me', parking, now())).toBe('cancel_requested');
    expect(await A.runs.finish('stop-me', 'cancelled', null, {}, 1, now())).toBe(true);
    expect(await A.runs.find('stop-me')).toMatchObject({ status: 'cancelled', cancelled_by: 'user-2' });
    expect(await B.runs.cancel('stop-me', 'user-2', now())).toEqual({ outcome: 'cancelled' });
    expect(await A.runs.park('stop-me', parking, now())).toBe('not_running');
  });

  test('one call decided by two replicas at once: one decision wins, the other sees it', async () => {
    const ws = workspace();
    await parked('decide-one', ws, ['call-1']);
    expect(await A.runs.find('decide-one')).toMatchObject({ status: 'awaiting_approval', credits_reserved: 1, credits_spent: 1 });
    expect(await balance(ws)).toBe(99);
    const queuedBefore = B.queued;
    const [a, b] = await Promise.all([
      A.runs.decide('decide-one', 'call-1', 'approve', null, 'user-a', now()),
      B.runs.decide('decide-one', 'call-1', 'reject', 'no', 'user-b', now()),
    ]);
    const outcomes = [a, b].map((o) => o.outcome).sort();
    expect(outcomes).toEqual(['decided_before', 'resumed']);
    const winner = a.outcome === 'resumed' ? 'user-a' : 'user-b';
    const loser = (a.outcome === 'decided_before' ? a : b) as { approval: { decided_by: string } };
    expect(loser.approval.decided_by).toBe(winner);
    const run = (await A.runs.find('decide-one'))!;
    expect(run).toMatchObject({ status: 'queued', approval_expires_at: null });
    expect(JSON.parse(run.state).tool_calls[0].approval).toMatchObject({ decided_by: winner });
    expect(await types('decide-one')).toEqual(['run.queued', 'run.started', 'step', 'run.awaiting_approval', 'approval.decided', 'run.queued']);
    if (winner === 'user-a') await until(() => B.queued > queuedBefore); // the other replica hears a run was queued
  });

  test('two calls of one run decided at once on two replicas: the last one resumes the run', async () => {
    const ws = workspace();
    for (let i = 0; i < 10; i++) {
      const id = `decide-two-${i}`;
      await parked(id, ws, ['call-1', 'call-2']);
      const outcomes = await Promise.all([
        A.runs.decide(id, 'call-1', 'approve', null, 'user-a', now()),
        B.runs.decide(id, 'call-2', 'approve', null, 'user-b', now()),
      ]);
      expect(outcomes.map((o) => o.outcome).sort()).toEqual(['decided', 'resumed']);
      const run = (await A.runs.find(id))!;
      expect(run.status).toBe('queued');
      expect(JSON.parse(run.state).tool_calls.map((c: { approval: { decided_by: string } }) => c.approval.decided_by)).toEqual(['user-a', 'user-b']);
    }
    expect(await A.runs.decide('decide-two-0', 'call-9', 'approve', null, 'u', now())).toEqual({ outcome: 'no_call' });
  });

  test('a parked run past its expiry fails, by expireApprovals or by a late decision', async () => {
    const ws = workspace();
    const past = new Date(Date.now() - 1000).toISOString();
    await parked('expire-1', ws, ['c'], past);
    await parked('expire-2', ws, ['c'], past);
    expect(await B.runs.decide('expire-2', 'c', 'approve', null, 'u', now())).toEqual({ outcome: 'not_waiting', status: 'failed' });
    const expired = await Promise.all([A.runs.expireApprovals('too late', now()), B.runs.expireApprovals('too late', now())]);
    expect(expired[0] + expired[1]).toBe(1);
    expect(await A.runs.find('expire-1')).toMatchObject({ status: 'failed', error: 'too late' });
    expect(await A.runs.find('expire-2')).toMatchObject({ status: 'failed', error: APPROVAL_EXPIRED });
    expect(await B.runs.cancel('expire-1', 'u', now())).toEqual({ outcome: 'finished', status: 'failed' });
  });
});

describe('events', () => {
  test('two replicas appending to one run at once: numbered 1..n without gaps', async () => {
    const ws = workspace();
    await queue(A, newRun('busy-events', { workspaceId: ws }));
    await A.runs.claim('busy-events', lease('a'), 10);
    const save = (r: Replica, k: number) =>
      r.runs.saveState('busy-events', () => ({ state: { k }, spent: 0, events: [{ type: 'step', data: { k } }, { type: 'tool', data: { k } }] }));
    await Promise.all([...range(25).map((k) => save(A, k)), ...range(25).map((k) => save(B, k)), B.runs.cancel('busy-events', 'user-2', now())]);
    await B.runs.finish('busy-events', 'cancelled', null, {}, 0, now(), [{ type: 'last', data: {} }]);
    const n = 2 + 100 + 1 + 2;
    expect(await seqs('busy-events')).toEqual(range(n));
    const typesSeen = await types('busy-events');
    expect(typesSeen.filter((t) => t === 'run.cancel_requested')).toHaveLength(1);
    expect(typesSeen.slice(-2)).toEqual(['last', FINAL_EVENT]);
    expect((await A.runs.events('busy-events', 100, 3)).map((e) => e.seq)).toEqual([101, 102, 103]);
  });

  test('beyond the limit only the final event is kept, numbered next', async () => {
    const C = await replica('replica-c', 5);
    try {
      await queue(C, newRun('limited', { workspaceId: workspace() }));
      await C.runs.claim('limited', lease('c'), 10);
      await C.runs.saveState('limited', () => ({ state: {}, spent: 0, events: range(2).map((k) => ({ type: 'step', data: { k }, at: '2020-01-01T00:00:00.000Z' })) }));
      await C.runs.saveState('limited', () => ({ state: {}, spent: 0, events: [{ type: 'step', data: {} }] })); // the 5th
      // Its step would be the 6th: dropped; the final event is kept, numbered next.
      expect(await C.runs.finish('limited', 'failed', 'boom', {}, 0, now(), [{ type: 'step', data: {} }])).toBe(true);
      const stored = await C.runs.events('limited', 0, 100);
      expect(stored.map((e) => [e.seq, e.type])).toEqual([
        [1, 'run.queued'],
        [2, 'run.started'],
        [3, 'step'],
        [4, 'step'],
        [5, 'step'],
        [6, FINAL_EVENT],
      ]);
      expect(stored[2]!.at).toBe('2020-01-01T00:00:00.000Z');
      expect(JSON.parse(stored[5]!.data)).toEqual({ status: 'failed', error: 'boom' });
    } finally {
      await C.notifications.close();
      await C.db.close();
    }
  });
});

describe('notifications', () => {
  test('an accept on one replica wakes the other’s onQueued; an event write wakes the other’s onEvents (not its own twice)', async () => {
    const ws = workspace();
    const [queuedA, queuedB] = [A.queued, B.queued];
    await queue(A, newRun('notified', { workspaceId: ws }));
    await until(() => B.queued > queuedB, 1000);
    await sleep(100);
    expect(A.queued).toBe(queuedA); // its own accept: the local runner is handed the run
    A.events.length = 0;
    B.events.length = 0;
    await A.runs.claim('notified', lease('a'), 10);
    expect(A.events).toEqual(['notified']); // at once, when the write committed
    await until(() => B.events.includes('notified'), 1000);
    await sleep(100);
    expect(A.events).toEqual(['notified']); // its own notification is ignored
    expect(B.events).toEqual(['notified']);
  });

  test('a dropped listening connection reconnects, says "look again", and hears again', async () => {
    const [queuedA, queuedB] = [A.queued, B.queued];
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const { rowCount } = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'build-api-listener' AND datname = current_database()`);
      expect(rowCount).toBeGreaterThanOrEqual(2);
    } finally {
      await admin.end();
    }
    await until(() => A.queued > queuedA && B.queued > queuedB); // the null after reconnecting
    const queuedNow = B.queued;
    await queue(A, newRun('after-reconnect', { workspaceId: workspace() }));
    await until(() => B.queued > queuedNow, 1000);
  });

  test('a listener that cannot connect keeps trying without crashing, and close() stops it', async () => {
    const url = new URL(database.url);
    url.port = '1'; // nothing listens there
    const n = listenForNotifications(url.toString(), { firstRetryMs: 10, maxRetryMs: 20 });
    let calls = 0;
    n.on('build_runs_queued', () => calls++);
    await sleep(200);
    await n.close();
    expect(calls).toBe(0);
  });
});

describe('lists and pruning', () => {
  test('pages of a workspace’s runs, newest first, with the filters and the items of SQLite', async () => {
    const ws = workspace();
    const ids = range(25).map((i) => `list-${String(i).padStart(3, '0')}`);
    for (const [i, id] of ids.entries()) {
      await queue(either(i), newRun(id, { workspaceId: ws, kind: 'agent', targetId: i % 2 ? 'agent-odd' : 'agent-even', agent: { slug: 'helper', name: 'Helper' } }));
    }
    await queue(A, newRun('list-other-user', { workspaceId: ws, kind: 'agent', startedBy: 'user-2' })); // another user's test run
    await queue(A, newRun('list-webhook', { workspaceId: ws, kind: 'agent', startedBy: 'user-2', source: 'webhook', triggerId: 't' }));
    await queue(A, newRun('list-workflow', { workspaceId: ws, kind: 'workflow', targetId: 'wf-9', targetVersion: 3 }));
    await A.runs.claim('list-003', lease('a'), 100);
    await A.runs.finish('list-003', 'succeeded', null, {}, 1, now());
    const page = (q: Partial<Parameters<RunRepository['list']>[0]> = {}) => B.runs.list({ kind: 'agent', workspaceId: ws, userId: 'user-1', limit: 10, ...q });
    const seen: string[] = [];
    for (let rows = await page(); rows.length; rows = await page({ beforeId: rows[rows.length - 1]!.id })) seen.push(...rows.map((r) => r.id));
    expect(seen).toEqual(['list-webhook', ...[...ids].reverse()]);
    expect(seen).not.toContain('list-other-user');
    const item = JSON.parse((await page({ statuses: ['succeeded'] }))[0]!.item);
    expect(Object.keys(item)).toEqual(['id', 'agent', 'status', 'source', 'trigger_id', 'credits', 'error', 'started_at', 'run_started_at', 'finished_at']);
    expect(item).toMatchObject({ id: 'list-003', agent: { slug: 'helper', name: 'Helper' }, status: 'succeeded', source: 'test', trigger_id: null, credits: 1, error: null });
    expect((await page({ targetId: 'agent-odd', limit: 100 })).length).toBe(12);
    expect((await page({ source: 'webhook' })).map((r) => r.id)).toEqual(['list-webhook']);
    expect((await page({ statuses: ['succeeded', 'queued'], limit: 100 })).length).toBe(26);
    const [from, before] = [(await A.runs.find('list-010'))!.accepted_at, (await A.runs.find('list-020'))!.accepted_at];
    const within: string[] = [];
    for (const id of ids) {
      const at = (await A.runs.find(id))!.accepted_at;
      if (at >= from && at < before) within.push(id);
    }
    expect(within.length).toBeGreaterThan(0);
    expect((await page({ acceptedFrom: from, acceptedBefore: before, limit: 100 })).map((r) => r.id)).toEqual(within.reverse());
    const workflow = JSON.parse((await B.runs.list({ kind: 'workflow', workspaceId: ws, userId: 'user-1', limit: 5 }))[0]!.item);
    expect(Object.keys(workflow)).toEqual(['id', 'workflow_id', 'workflow_version_id', 'status', 'source', 'trigger_id', 'credits', 'error', 'accepted_at', 'started_at', 'finished_at']);
    expect(workflow).toMatchObject({ id: 'list-workflow', workflow_id: 'wf-9', workflow_version_id: 'wf-9@3', credits: 0 });
    await expect(page({ limit: 0 })).rejects.toThrow(RangeError);
  });

  test('pruneFinished deletes finished runs before a time with their events and approvals, in batches', async () => {
    const ws = workspace();
    for (const id of ['prune-1', 'prune-2', 'prune-3']) {
      await queue(A, newRun(id, { workspaceId: ws, kind: 'agent' }));
      await A.runs.claim(id, lease('a'), 10);
    }
    await A.runs.park('prune-3', { state: {}, spent: 0, calls: [{ id: 'c', tool: 't' }], expiresAt: '2000-01-01T00:00:00.000Z', events: [] }, now());
    await A.runs.expireApprovals('expired', '2000-01-02T00:00:00.000Z');
    await A.runs.finish('prune-1', 'succeeded', null, {}, 0, '2000-01-01T00:00:00.000Z');
    expect(await A.runs.find('prune-3')).toMatchObject({ status: 'failed', finished_at: '2000-01-02T00:00:00.000Z' });
    const pruned = await Promise.all([A.runs.pruneFinished('2001-01-01T00:00:00.000Z', 1), B.runs.pruneFinished('2001-01-01T00:00:00.000Z', 1)]);
    expect(pruned.sort()).toEqual([1, 1]);
    expect(await A.runs.pruneFinished('2001-01-01T00:00:00.000Z', 10)).toBe(0);
    for (const id of ['prune-1', 'prune-3']) {
      expect(await A.runs.find(id)).toBeNull();
      expect(await A.runs.events(id, 0, 10)).toEqual([]);
    }
    expect((await A.db.rows('SELECT 1 FROM run_approvals WHERE run_id = $1', ['prune-3'])).length).toBe(0);
    expect(await A.runs.find('prune-2')).toMatchObject({ status: 'running' });
  });
});

describe('the SQLite adapter’s behaviour', () => {
  /** One life of several runs, the same calls on either adapter; what each call answered and what the store then shows. */
  async function story(runs: RunRepository, other: RunRepository, balanceOf: () => Promise<number>, ws: string) {
    const answers: unknown[] = [];
    const say = async (answer: Promise<unknown>) => answers.push(await answer);
    const since = '2000-01-01T00:00:00.000Z';
    const at = (s: number) => `2030-01-01T00:00:${String(s).padStart(2, '0')}.000Z`;
    const agent = { slug: 'helper', name: 'Helper' };
    await say(runs.accept(newRun('p-agent', { workspaceId: ws, kind: 'agent', agent, minimumCost: 2, initialCredits: 20 }), (b) => `only ${b}`));
    await say(other.accept(newRun('p-wf', { workspaceId: ws, targetId: 'wf-p', targetVersion: 4 }), (b) => `only ${b}`));
    await say(runs.accept(newRun('p-cancel', { workspaceId: ws }), (b) => `only ${b}`));
    await say(other.accept(newRun('p-refused', { workspaceId: ws, minimumCost: 50 }), (b) => `only ${b}`));
    await say(runs.accept(newRun('p-hook', { workspaceId: ws, kind: 'agent', agent, source: 'webhook', triggerId: 'p-t', delivery: { key: 'd', since } }), (b) => `only ${b}`));
    await say(other.accept(newRun('p-hook-2', { workspaceId: ws, kind: 'agent', agent, source: 'webhook', triggerId: 'p-t', delivery: { key: 'd', since } }), (b) => `only ${b}`));
    await say(runs.claim('p-agent', lease('p'), 10));
    await say(other.saveState('p-agent', () => ({ state: { step: 1 }, spent: 1, events: [{ type: 'step', data: { n: 1 }, at: at(1) }, { type: 'tool', data: { n: 2 }, at: at(2) }] })));
    await say(runs.reserveMore('p-agent', 2));
    await say(runs.reserveMore('p-agent', 100));
    const state = { tool_calls: [{ id: 'c1', status: 'awaiting_approval' }, { id: 'c2', status: 'awaiting_approval' }] };
    const calls = [{ id: 'c1', tool: 'kv.delete' }, { id: 'c2', tool: 'kv.set' }];
    await say(other.park('p-agent', { state, spent: 3, calls, expiresAt: '2099-01-01T00:00:00.000Z', events: [{ type: 'step', data: { n: 3 }, at: at(3) }] }, at(4)));
    await say(runs.decide('p-agent', 'c1', 'approve', 'fine', 'user-1', at(5)));
    await say(other.decide('p-agent', 'c1', 'reject', null, 'user-2', at(6)));
    await say(other.decide('p-agent', 'c2', 'reject', null, 'user-2', at(7)));
    await say(runs.decide('p-agent', 'c3', 'reject', null, 'user-2', at(7)));
    await say(runs.claim('p-agent', lease('p'), 10));
    await say(other.finish('p-agent', 'succeeded', null, { done: true }, 4, at(8), [{ type: 'step', data: { n: 4 }, at: at(8) }]));
    await say(runs.cancel('p-cancel', 'user-1', at(9)));
    await say(other.cancel('p-cancel', 'user-1', at(9)));
    await say(runs.claim('p-wf', lease('p'), 10));
    await say(other.cancel('p-wf', 'user-2', at(10)));
    await say(runs.saveState('p-wf', () => ({ state: { step: 2 }, spent: 1 })));
    await say(runs.finish('p-wf', 'cancelled', null, {}, 1, at(11)));
    await say(runs.finish('p-wf', 'succeeded', null, {}, 1, at(12)));
    const ids = ['p-agent', 'p-wf', 'p-cancel', 'p-refused', 'p-hook'];
    const rows = await Promise.all(ids.map(async (id) => ({ ...(await runs.find(id))!, workspace_id: 'ws' })));
    const events = await Promise.all(ids.map(async (id) => (await other.events(id, 0, 100)).map((e) => ({ ...e, data: JSON.parse(e.data) }))));
    const lists = await Promise.all(
      (['agent', 'workflow'] as const).map(async (kind) => (await runs.list({ kind, workspaceId: ws, userId: 'user-1', limit: 10 })).map((r) => ({ id: r.id, item: JSON.parse(r.item) }))),
    );
    return normalise({ answers, rows: rows.map((r) => ({ ...r, snapshot: r.snapshot && JSON.parse(r.snapshot) })), events, lists, balance: await balanceOf() });
  }
  /** Stamps the adapters take from their clocks (acceptance, claims) differ: only whether one is there is compared; those the calls gave are kept. */
  const normalise = (value: unknown): unknown =>
    JSON.parse(JSON.stringify(value), (_, v) => (typeof v === 'string' && /^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(v) && !/^(2000|2030|2099)-/.test(v) ? '<now>' : v));

  test('the same calls give the same answers, rows, events, list items and balance', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-pg-runs-'));
    const sqlite = createSqliteStore(openDatabase(path.join(dir, 'runs.db')), new StampClock());
    try {
      const fromSqlite = await story(sqlite.runs, sqlite.runs, () => sqlite.workspaces.credits('ws-parity', 0), 'ws-parity');
      const fromPg = await story(A.runs, B.runs, () => balance('ws-parity'), 'ws-parity');
      expect(fromPg).toEqual(fromSqlite);
      // p-agent charged 3 (its second claim held only what it had spent), p-wf 1, p-hook still holds 1.
      expect((fromPg as { balance: number }).balance).toBe(20 - 3 - 1 - 1);
    } finally {
      await sqlite.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
