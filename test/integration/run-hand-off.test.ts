// Runs accepted by this process are handed to the workers in memory; past the hand-off limit they
// wait in the database's queue. Either way each run executes once, in the order it was accepted.
import { createAppRegistry } from '../../src/apps/registry';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '../../src/log';
import { createModelRegistry } from '../../src/runtime/models';
import { createRunner, type QueuedRun, type Runner } from '../../src/runtime/runner';
import { initialWorkflowState } from '../../src/runtime/workflow-executor';
import type { RunRepository, Store } from '../../src/store/port';
import { startService, type TestService } from '../helpers/service';

let t: TestService;
let target: http.Server;
let hits: string[];
let workflow: NonNullable<Awaited<ReturnType<Store['workflows']['find']>>>;

beforeAll(async () => {
  target = http.createServer((req, res) => {
    hits.push(req.url as string);
    res.end('ok');
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  t = await startService({ HTTP_TOOL_ALLOW_PRIVATE: 'true', DEFAULT_CREDITS: '100' });
  const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/{{inputs.n}}`;
  const created = await t.client().PUT('/api/build/workflows', {
    body: {
      kind: 'service.workflow/v1',
      slug: 'call',
      name: 'Call',
      inputs: { n: {} },
      steps: [{ id: 'call', kind: 'tool', tool: 'http.request', args: { method: 'GET', url } }],
    },
  });
  expect(created.response.status).toBe(201);
  workflow = (await t.service.store.workflows.find('ws-1', 'call'))!;
});
beforeEach(() => {
  hits = [];
});
afterAll(async () => {
  await t.close();
  await target.close();
});

/** Queues run n (ids sort in the order of n) as an accepted test run does, and returns it as handed over. */
async function queue(n: number): Promise<QueuedRun> {
  const run: QueuedRun = {
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    kind: 'workflow',
    workspaceId: 'ws-1',
    snapshot: workflow.document,
    request: { input: { n } },
    state: initialWorkflowState(workflow.document),
    startedBy: 'user-1',
    visibleTo: null,
    creditsReserved: 1,
    creditsSpent: 0,
    source: 'test',
    acceptedAt: new Date().toISOString(),
    traceParent: null,
  };
  const outcome = await t.service.store.runs.accept(
    {
      id: run.id,
      kind: 'workflow',
      workspaceId: 'ws-1',
      startedBy: 'user-1',
      targetId: workflow.id,
      targetVersion: workflow.version,
      source: 'test',
      request: run.request,
      snapshotJson: workflow.json,
      state: run.state,
      minimumCost: 1,
      initialCredits: 100,
    },
    () => 'refused',
  );
  expect(outcome.status).toBe('queued');
  return run;
}

/**
 * A runner of its own over the service's store, with one worker and room for `handOffLimit` runs
 * in memory (the service's own runner is told of none of these runs); `runs` wraps its run store.
 */
function runnerWith(handOffLimit: number, runs: (real: RunRepository) => Partial<RunRepository> = () => ({})): Runner {
  const real = t.service.store.runs;
  return createRunner({
    store: { ...t.service.store, runs: { ...real, ...runs(real) } },
    models: createModelRegistry(t.config),
    apps: createAppRegistry({ store: t.service.store, credentials: { headersFor: async () => ({}) }, allowPrivate: false }),
    http: { timeoutMs: 5000, maxBytes: 1024, allowPrivate: true },
    limits: t.config.runLimits,
    workers: 1,
    perWorkspace: 8, // not these tests' subject (a run another test left running holds a slot)
    logger: createLogger('silent'),
    handOffLimit,
  });
}

const statusOf = async (id: string) => (await t.client().GET('/api/build/workflow-runs/{runId}', { params: { path: { runId: id } } })).data!.data.status;

test('runs beyond the hand-off limit run from the database: every run once, in acceptance order', async () => {
  const byId: string[] = [];
  const fromTable: string[] = [];
  const runner = runnerWith(2, (real) => ({
    claim: (id, lease, cap) => {
      byId.push(id);
      return real.claim(id, lease, cap);
    },
    claimNext: async (lease, cap) => {
      const row = await real.claimNext(lease, cap);
      if (row) fromTable.push(row.id);
      return row;
    },
  }));
  const credits = await t.service.store.workspaces.credits('ws-1', 100);
  const runs = [];
  for (const n of [1, 2, 3, 4, 5]) runs.push(await queue(n));
  // Run 1 is taken at once, 2 and 3 wait in memory, 4 and 5 in the database.
  for (const run of runs) runner.notify(run);
  await runner.idle();

  expect(hits).toEqual(['/1', '/2', '/3', '/4', '/5']);
  expect(byId).toEqual(runs.slice(0, 3).map((r) => r.id));
  expect(fromTable).toEqual(runs.slice(3).map((r) => r.id));
  for (const run of runs) expect(await statusOf(run.id)).toBe('succeeded');
  expect(await t.service.store.workspaces.credits('ws-1', 0)).toBe(credits - 5);
});

test('a run handed over after another worker took it from the database is not executed again', async () => {
  const run = await queue(6);
  const taken = await t.service.store.runs.claimNext({ owner: 'another worker', ms: 60_000 }, 64); // another worker's claim
  expect(taken!.id).toBe(run.id);
  const runner = runnerWith(8);
  runner.notify(run);
  await runner.idle();
  expect(hits).toEqual([]);
  expect(await statusOf(run.id)).toBe('running'); // still the other worker's
});

test('a claim that fails (its group did not commit) leaves the run to be claimed from the database', async () => {
  let failures = 0;
  const runner = runnerWith(8, (real) => ({
    claim: (id, lease, cap) => (failures++ ? real.claim(id, lease, cap) : Promise.reject(new Error('database is locked'))),
  }));
  const first = await queue(7);
  runner.notify(first);
  await runner.idle(); // the worker stopped on the failed claim; run 7 is still queued
  expect(await statusOf(first.id)).toBe('queued');
  const second = await queue(8);
  runner.notify(second);
  await runner.idle();
  expect(hits).toEqual(['/7', '/8']);
  expect(await statusOf(first.id)).toBe('succeeded');
  expect(await statusOf(second.id)).toBe('succeeded');
});
