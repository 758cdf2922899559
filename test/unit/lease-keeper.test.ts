// Leases on the runs this process executes, against a real SQLite store: renewed while they run,
// recovered when no live worker holds them, handed back at shutdown.
import os from 'node:os';
import { createLogger } from '../../src/log';
import { ExecutingRuns } from '../../src/runtime/runner/executing-runs';
import { createLeaseKeeper, DEFAULT_LEASE_MS, INTERRUPTED, newLease, SHUT_DOWN } from '../../src/runtime/runner/lease-keeper';
import type { Lease } from '../../src/store/port';
import { openTempStore, queueRun, toolWorkflow, type TempStore } from '../helpers/run-store';

const logger = createLogger('silent');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let t: TempStore;
beforeEach(() => {
  t = openTempStore();
});
afterEach(() => t.close());

const workflow = toolWorkflow([
  { id: 'a', tool: 'core.echo' },
  { id: 'b', tool: 'core.echo' },
]);
/** A run queued (2 credits reserved of 10) and claimed under `lease`. */
async function claimedBy(lease: Lease): Promise<string> {
  const run = await queueRun(t.store, workflow, { initialCredits: 10 });
  expect(await t.store.runs.claim(run.id, lease, 8)).toBe(true);
  return run.id;
}
const statusOf = async (id: string) => {
  const row = (await t.store.runs.find(id))!;
  return { status: row.status, error: row.error };
};
/** Keeps run `id` listed as executing here until the returned function is called; `stops` records stop requests. */
function executingHere(executing: ExecutingRuns, id: string, stops: string[]): () => void {
  let end = () => {};
  void executing.track(
    id,
    () => stops.push(id),
    () => new Promise<void>((resolve) => (end = resolve)),
  );
  return () => end();
}

test('a lease is in the name of this process start, for DEFAULT_LEASE_MS unless told', () => {
  const [a, b] = [newLease(), newLease(5000)];
  expect(a.owner.startsWith(`${os.hostname()}/${process.pid}/`)).toBe(true);
  expect(a.owner).not.toBe(b.owner);
  expect([a.ms, b.ms]).toEqual([DEFAULT_LEASE_MS, 5000]);
});

test('at start, runs any other owner holds are failed as interrupted, their unspent credits returned; later, only runs whose lease passed', async () => {
  const lease = newLease();
  const keeper = createLeaseKeeper({ runs: t.store.runs, lease, executing: new ExecutingRuns(), logger });
  const others = await claimedBy({ owner: 'a process that died', ms: 60_000 });
  const mine = await claimedBy(lease);
  expect(await t.store.workspaces.credits('ws-1', 0)).toBe(6);
  await keeper.recover(true);
  expect(await statusOf(others)).toEqual({ status: 'failed', error: INTERRUPTED });
  expect(await statusOf(mine)).toEqual({ status: 'running', error: null });
  expect(await t.store.workspaces.credits('ws-1', 0)).toBe(8);

  const live = await claimedBy({ owner: 'a live replica', ms: 60_000 });
  const passed = await claimedBy({ owner: 'a replica that died', ms: 1 });
  await sleep(20);
  await keeper.recover();
  expect(await statusOf(live)).toEqual({ status: 'running', error: null });
  expect(await statusOf(passed)).toEqual({ status: 'failed', error: INTERRUPTED });
});

test('renewing keeps a run held past its lease; once renewals stop, the run is abandoned', async () => {
  const lease = newLease(600);
  const executing = new ExecutingRuns();
  const keeper = createLeaseKeeper({ runs: t.store.runs, lease, executing, logger });
  const id = await claimedBy(lease);
  const end = executingHere(executing, id, []);
  keeper.startRenewing(); // every 200 ms
  try {
    await sleep(1000);
    await keeper.recover(); // another replica's look
    expect(await statusOf(id)).toEqual({ status: 'running', error: null });
  } finally {
    keeper.stopRenewing();
  }
  await sleep(800);
  await keeper.recover();
  expect(await statusOf(id)).toEqual({ status: 'failed', error: INTERRUPTED });
  end();
});

test('a run whose lease another process ended is stopped here at the next renewal; the ones still held are not', async () => {
  const lease = newLease();
  const executing = new ExecutingRuns();
  const keeper = createLeaseKeeper({ runs: t.store.runs, lease, executing, logger });
  const kept = await claimedBy(lease);
  const lost = await claimedBy(lease);
  const stops: string[] = [];
  const ends = [executingHere(executing, kept, stops), executingHere(executing, lost, stops)];
  await keeper.renew();
  expect(stops).toEqual([]);
  // Another process takes the run over (its lease is failed from under this one).
  await t.store.runs.finish(lost, 'failed', INTERRUPTED, {}, 0, new Date().toISOString());
  await keeper.renew();
  expect(stops).toEqual([lost]);
  for (const end of ends) end();
});

test('at shutdown, the runs still executing are failed as shut down and then asked to stop; with none, nothing is written', async () => {
  const lease = newLease();
  const executing = new ExecutingRuns();
  let releases = 0;
  const runs = {
    ...t.store.runs,
    releaseAll: (owner: string, message: string) => {
      releases++;
      return t.store.runs.releaseAll(owner, message);
    },
  };
  const keeper = createLeaseKeeper({ runs, lease, executing, logger });
  await keeper.handBack();
  expect(releases).toBe(0);

  const id = await claimedBy(lease);
  const stops: string[] = [];
  const end = executingHere(executing, id, stops);
  await keeper.handBack();
  expect(releases).toBe(1);
  expect(await statusOf(id)).toEqual({ status: 'failed', error: SHUT_DOWN });
  expect(stops).toEqual([id]);
  expect(await t.store.workspaces.credits('ws-1', 0)).toBe(10); // nothing was spent: all returned
  end();
});
