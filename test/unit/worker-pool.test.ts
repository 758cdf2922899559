// The worker pool against a real SQLite store: each queued run is claimed once (handed over in
// memory or from the database's queue), at most `workers` at once and `perWorkspace` of one
// workspace, and a pool that drains claims nothing more.
import { createLogger } from '../../src/log';
import { HandOffQueue } from '../../src/runtime/runner/hand-off-queue';
import { fromRow } from '../../src/runtime/runner/queued-run';
import { createWorkerPool, type WorkerPoolOptions } from '../../src/runtime/runner/worker-pool';
import type { QueuedRun } from '../../src/runtime/runner';
import { openTempStore, queueRun, toolWorkflow, type TempStore } from '../helpers/run-store';

const logger = createLogger('silent');
const lease = { owner: 'pool-test', ms: 60_000 };
const workflow = toolWorkflow([{ id: 'a', tool: 'core.echo' }]);
let t: TempStore;
beforeEach(() => {
  t = openTempStore();
});
afterEach(() => t.close());

/** An executor that records each run, holds it until `release` (when `hold`), then records its end. */
function recorder(hold = false) {
  const started: string[] = [];
  let running = 0;
  let most = 0;
  const waiting: (() => void)[] = [];
  const execute = async (run: QueuedRun) => {
    started.push(run.id);
    most = Math.max(most, ++running);
    if (hold) await new Promise<void>((resolve) => waiting.push(resolve));
    running--;
    await t.store.runs.finish(run.id, 'succeeded', null, run.state, 1, new Date().toISOString());
  };
  const releaseOne = () => waiting.shift()?.();
  const settle = () => new Promise((resolve) => setTimeout(resolve, 30));
  return { execute, started, most: () => most, waiting: () => waiting.length, releaseOne, settle };
}

const pool = (opts: Partial<WorkerPoolOptions> & Pick<WorkerPoolOptions, 'execute'>) =>
  createWorkerPool({ runs: t.store.runs, queue: new HandOffQueue(), lease, workers: 2, perWorkspace: 8, logger, ...opts });

test('runs handed over are claimed by id, the rest from the database, each executed once, oldest first', async () => {
  const claims: string[] = [];
  const fromTable: string[] = [];
  const runs = {
    claim: (id: string, l: typeof lease, cap: number) => {
      claims.push(id);
      return t.store.runs.claim(id, l, cap);
    },
    claimNext: async (l: typeof lease, cap: number) => {
      const row = await t.store.runs.claimNext(l, cap);
      if (row) fromTable.push(row.id);
      return row;
    },
  };
  const r = recorder();
  const workers = pool({ runs, queue: new HandOffQueue(2), workers: 1, execute: r.execute });
  const queued = [];
  for (let i = 0; i < 5; i++) queued.push(await queueRun(t.store, workflow));
  for (const run of queued) workers.notify(run);
  await workers.idle();
  const ids = queued.map((run) => run.id);
  expect(r.started).toEqual(ids);
  // The first run is taken at once; two more wait in memory (the hand-off limit), the rest in the table.
  expect(claims).toEqual(ids.slice(0, 3));
  expect(fromTable).toEqual(ids.slice(3));
  for (const id of ids) expect((await t.store.runs.find(id))!.status).toBe('succeeded');
});

test('at most `workers` runs execute at once; the others wait for a free worker', async () => {
  const r = recorder(true);
  const workers = pool({ workers: 2, execute: r.execute });
  for (let i = 0; i < 4; i++) workers.notify(await queueRun(t.store, workflow, { workspaceId: `ws-${i}` }));
  await r.settle();
  expect(r.started).toHaveLength(2);
  expect(workers.hasRoom()).toBe(false);
  while (r.waiting()) {
    r.releaseOne();
    await r.settle();
  }
  await workers.idle();
  expect(r.started).toHaveLength(4);
  expect(r.most()).toBe(2);
  expect(workers.hasRoom()).toBe(true);
});

test("a workspace at its cap waits in the table while others' runs go; its run goes when one of its own ends", async () => {
  const r = recorder(true);
  const workers = pool({ workers: 3, perWorkspace: 1, execute: r.execute });
  const [first, second] = [await queueRun(t.store, workflow, { workspaceId: 'busy' }), await queueRun(t.store, workflow, { workspaceId: 'busy' })];
  const other = await queueRun(t.store, workflow, { workspaceId: 'other' });
  for (const run of [first!, second!, other]) workers.notify(run);
  await r.settle();
  expect(r.started).toEqual([first!.id, other.id]);
  expect((await t.store.runs.find(second!.id))!.status).toBe('queued');
  r.releaseOne(); // the first run of 'busy' ends: its second is claimed from the table
  await r.settle();
  expect(r.started).toEqual([first!.id, other.id, second!.id]);
  while (r.waiting()) r.releaseOne();
  await workers.idle();
});

test('a reserved worker executes the run its acceptance claimed and goes on; a released one lets a run notified meanwhile go; none is reserved while no worker is free or a run waits here', async () => {
  const claims: string[] = [];
  const runs = {
    claim: (id: string, l: typeof lease, cap: number) => {
      claims.push(id);
      return t.store.runs.claim(id, l, cap);
    },
    claimNext: t.store.runs.claimNext,
  };
  const r = recorder(true);
  const workers = pool({ runs, workers: 2, perWorkspace: 3, execute: r.execute });
  const first = workers.reserve()!;
  expect(first).toMatchObject({ lease, cap: 3 });
  const second = workers.reserve()!;
  expect(workers.reserve()).toBeNull(); // both workers reserved
  const claimed = await queueRun(t.store, workflow, { claim: { lease: first.lease, cap: first.cap } });
  expect((await t.store.runs.find(claimed.id))!.status).toBe('running');
  first.execute(claimed);
  await r.settle();
  expect(r.started).toEqual([claimed.id]);
  expect(claims).toEqual([]); // the acceptance claimed it: the worker claims nothing
  const late = await queueRun(t.store, workflow);
  workers.notify(late); // no worker free: it waits in memory
  await r.settle();
  expect(r.started).toEqual([claimed.id]);
  second.release();
  await r.settle();
  expect(r.started).toEqual([claimed.id, late.id]);
  expect(claims).toEqual([late.id]);
  while (r.waiting()) {
    r.releaseOne();
    await r.settle();
  }
  await workers.idle();
  expect(workers.hasRoom()).toBe(true);
  // A run this process was told of and has not looked for goes first: no worker is reserved past it.
  const waiting = await queueRun(t.store, workflow);
  workers.notify();
  expect(workers.reserve()).toBeNull();
  await r.settle();
  expect(r.started).toContain(waiting.id);
  r.releaseOne();
  await workers.idle();
  // Released unused, a reservation leaves the pool as it was.
  workers.reserve()!.release();
  await workers.idle();
  expect(workers.hasRoom()).toBe(true);
});

test('a claim that fails sends the next worker to the table, where the run still waits', async () => {
  let failures = 0;
  const runs = {
    claim: (id: string, l: typeof lease, cap: number) => (failures++ ? t.store.runs.claim(id, l, cap) : Promise.reject(new Error('database is locked'))),
    claimNext: t.store.runs.claimNext,
  };
  const r = recorder();
  const workers = pool({ runs, execute: r.execute });
  const run = await queueRun(t.store, workflow);
  workers.notify(run);
  await workers.idle();
  expect(r.started).toEqual([]);
  workers.notify(); // any later notification
  await workers.idle();
  expect(r.started).toEqual([run.id]);
});

test('a draining pool waits for its runs (at most the grace period) and claims nothing more', async () => {
  const r = recorder(true);
  const workers = pool({ workers: 1, execute: r.execute });
  workers.notify(await queueRun(t.store, workflow));
  await r.settle();
  const started = Date.now();
  await workers.drain(50); // the run is still held: the grace period ends the wait
  expect(Date.now() - started).toBeLessThan(1000);
  const late = await queueRun(t.store, workflow);
  workers.notify(late);
  r.releaseOne();
  await workers.idle();
  expect(r.started).toHaveLength(1);
  expect((await t.store.runs.find(late.id))!.status).toBe('queued');
});

test('a claimed row becomes the run a worker executes; a damaged document becomes undefined, failing only that run', async () => {
  const run = await queueRun(t.store, workflow);
  const row = (await t.store.runs.claimNext(lease, 8))!;
  expect(fromRow(row)).toEqual({ ...run, snapshot: workflow });
  expect(fromRow({ ...row, snapshot: '{"cut off', step_agents: '{}' })).toMatchObject({ snapshot: undefined, stepAgents: {} });
  expect(fromRow({ ...row, step_agents: null })).not.toHaveProperty('stepAgents');
});

test('a backlog nobody announced is drained by every worker, each going on while it finds runs, oldest first in a workspace', async () => {
  const r = recorder();
  const claims: number[] = [];
  const runs = {
    claim: t.store.runs.claim.bind(t.store.runs),
    claimNext: async (l: typeof lease, cap: number) => {
      const row = await t.store.runs.claimNext(l, cap);
      claims.push(row ? 1 : 0);
      return row;
    },
  };
  const queued = [];
  for (let i = 0; i < 30; i++) queued.push(await queueRun(t.store, workflow, { workspaceId: `ws-${i % 2}` }));
  const workers = pool({ runs, workers: 3, perWorkspace: 2, execute: r.execute });
  workers.notifyBacklog();
  await workers.idle();
  expect([...r.started].sort()).toEqual(queued.map((run) => run.id).sort());
  for (const ws of ['ws-0', 'ws-1']) {
    const ofWorkspace = queued.filter((run) => run.workspaceId === ws).map((run) => run.id);
    expect(r.started.filter((id) => ofWorkspace.includes(id))).toEqual(ofWorkspace);
  }
  // Every run claimed by a look; the looks that found nothing are few (each worker's last), not one per run.
  expect(claims.filter(Boolean)).toHaveLength(30);
  expect(claims.length - 30).toBeLessThanOrEqual(2 * 3);
});

test("a single look that finds a backlog brings in the other free workers (the queue poll's)", async () => {
  const r = recorder(true);
  for (let i = 0; i < 6; i++) await queueRun(t.store, workflow, { workspaceId: `ws-${i}` });
  const workers = pool({ workers: 3, execute: r.execute });
  workers.notifyBacklog(1);
  await r.settle();
  expect(r.started).toHaveLength(3); // one look found a run, and each find added a worker
  while (r.waiting()) {
    r.releaseOne();
    await r.settle();
  }
  await workers.idle();
  expect(r.started).toHaveLength(6);
});

test('a backlog held back by its workspace cap goes on as runs end here, without waiting for the poll', async () => {
  const r = recorder(true);
  const queued = [];
  for (let i = 0; i < 5; i++) queued.push(await queueRun(t.store, workflow, { workspaceId: 'ws-capped' }));
  const workers = pool({ workers: 3, perWorkspace: 1, execute: r.execute });
  workers.notifyBacklog();
  await r.settle();
  expect(r.started).toEqual([queued[0]!.id]); // the cap: one at a time, the other looks found nothing claimable
  while (r.waiting()) {
    r.releaseOne();
    await r.settle();
  }
  await workers.idle();
  expect(r.started).toEqual(queued.map((run) => run.id));
});

test('a worker lent to a child run executes that run alone, beyond the pool and the workspace cap; at most `workers` are lent', async () => {
  const r = recorder(true);
  const workers = pool({ workers: 2, perWorkspace: 1, execute: r.execute });
  const first = workers.lend()!;
  const second = workers.lend()!;
  expect(workers.lend()).toBeNull(); // as many lent as the pool has workers
  expect(first.cap).toBeGreaterThan(1000); // the child's claim is not held to its workspace's cap
  const child = await queueRun(t.store, workflow);
  first.execute(child);
  second.release();
  await r.settle();
  expect(r.started).toEqual([child.id]);
  // The released one is returned; the one executing still counts until its run ends.
  const third = workers.lend();
  expect(third).not.toBeNull();
  expect(workers.lend()).toBeNull();
  third!.release();
  // A queued run is not taken by a lent worker once its own run ends.
  const queued = await queueRun(t.store, workflow);
  r.releaseOne();
  await r.settle();
  expect(r.started).toEqual([child.id]);
  expect((await t.store.runs.find(queued.id))!.status).toBe('queued');
  await workers.idle();
});
