// One workspace cannot take every worker: with 2 workers and a cap of 1 run per workspace, a
// workspace that queues several slow runs executes them one at a time, and another workspace's run
// starts at once on the free worker instead of waiting behind them.
import { startService, type TestService } from '../helpers/service';
import { storedRows } from '../helpers/stored';
import { waitForWorkflowRun } from '../helpers/runs';

let t: TestService;
beforeAll(async () => {
  t = await startService({ RUN_WORKERS: '2', RUN_WORKERS_PER_WORKSPACE: '1' });
});
afterAll(() => t.close());

async function workflowIn(workspace: string, ms: number) {
  const client = t.client(t.token({ workspace }));
  await client.PUT('/api/build/workflows', {
    body: { kind: 'service.workflow/v1', slug: 'w', name: 'W', steps: [{ id: 'nap', kind: 'tool', tool: 'core.sleep', args: { ms } }] },
  });
  return async () => (await client.POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'w' } }, body: {} })).data!.data.run_id;
}

test("a busy workspace runs one at a time; another workspace's run starts at once on the free worker", async () => {
  const busy = await workflowIn('ws-busy', 600);
  const other = await workflowIn('ws-other', 10);
  const busyRuns = [await busy(), await busy(), await busy()];
  const otherRun = await other();
  const done = await waitForWorkflowRun(t, otherRun, t.token({ workspace: 'ws-other' }));
  expect(done.status).toBe('succeeded');

  await t.service.runner.idle();
  const rows = await storedRows<{ started_at: string; finished_at: string }>(
    t.config,
    `SELECT started_at, finished_at FROM runs WHERE id IN (${busyRuns.map(() => '?').join(',')}) ORDER BY started_at`,
    busyRuns,
  );
  expect(rows).toHaveLength(3);
  // Never two of the busy workspace's runs at once: each starts after the one before it ended.
  for (let i = 1; i < rows.length; i++) expect(rows[i]!.started_at >= rows[i - 1]!.finished_at).toBe(true);
  // The other workspace's run did not wait behind them: it was done before the second one started.
  expect(done.finished_at! < rows[1]!.started_at).toBe(true);
}, 15_000);
