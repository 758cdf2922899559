// Runs queued before a start are claimed as fast as workers free up, oldest first within a
// workspace, and a run accepted after the start never overtakes an older queued run of its
// workspace (issue 42: a backlog drained at the queue poll's pace, one run a second).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPgDatabase, storeUnderTest } from '../helpers/database';
import { startService, type TestService } from '../helpers/service';
import { storedRows, storedValue, type StoredAt } from '../helpers/stored';

const BACKLOG = 60;
const WORKSPACES = ['ws-a', 'ws-b'];

const serviceOn = (at: StoredAt) =>
  startService({
    ...(at.databaseUrl ? { DATABASE_URL: at.databaseUrl } : { DATABASE_PATH: at.databasePath }),
    RUN_WORKERS: '4',
    RUN_WORKERS_PER_WORKSPACE: '3',
  });

async function startRun(t: TestService, workspace: string): Promise<string> {
  const res = await t.client(t.token({ workspace })).POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'quick' } }, body: {} });
  expect(res.response.status).toBe(202);
  return res.data!.data.run_id;
}

const unfinished = (at: StoredAt) => storedValue<number>(at, "SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running')");
/** A workspace's runs in the order they were accepted, and in the order they started. */
const orders = async (at: StoredAt, workspace: string) => ({
  accepted: (await storedRows<{ id: string }>(at, 'SELECT id FROM runs WHERE workspace_id = ? ORDER BY accepted_at, id', [workspace])).map((r) => r.id),
  started: (await storedRows<{ id: string }>(at, 'SELECT id FROM runs WHERE workspace_id = ? ORDER BY started_at, id', [workspace])).map((r) => r.id),
});

test(`${BACKLOG} runs queued before a start drain at the workers' pace, oldest first, and a run accepted after the start waits its turn`, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-backlog-'));
  const pgDatabase = storeUnderTest === 'postgres' ? await createPgDatabase() : null;
  const at: StoredAt = { databasePath: path.join(dir, 'build.db'), databaseUrl: pgDatabase?.url ?? null };
  try {
    // A service whose workers are stopped accepts the runs: they wait in the queue, as a crash leaves them.
    const first = await serviceOn(at);
    for (const workspace of WORKSPACES) {
      const res = await first.client(first.token({ workspace })).PUT('/api/build/workflows', {
        body: { kind: 'service.workflow/v1', slug: 'quick', name: 'Quick', steps: [{ id: 'nap', kind: 'tool', tool: 'core.sleep', args: { ms: 20 } }] },
      });
      expect(res.response.status).toBe(201);
    }
    await first.service.runner.stop(0);
    for (let i = 0; i < BACKLOG; i++) await startRun(first, WORKSPACES[i % 2]!);
    expect(await unfinished(at)).toBe(BACKLOG);
    await first.close();

    const second = await serviceOn(at);
    const started = Date.now();
    try {
      const late = await startRun(second, 'ws-a'); // accepted after the start, behind ws-a's backlog
      while ((await unfinished(at))! > 0) {
        expect(Date.now() - started).toBeLessThan(15_000); // one a second would take a minute
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // 61 runs of 20 ms on 4 workers (3 per workspace): a second or two, not 60.
      const drainMs = Date.now() - started;
      expect(drainMs).toBeLessThan(8_000);
      for (const workspace of WORKSPACES) {
        const { accepted, started: startOrder } = await orders(at, workspace);
        expect(startOrder).toEqual(accepted);
        if (workspace === 'ws-a') expect(startOrder.at(-1)).toBe(late);
      }
      expect(await storedValue<number>(at, "SELECT COUNT(*) FROM runs WHERE status = 'succeeded'")).toBe(BACKLOG + 1);
    } finally {
      await second.close();
    }
  } finally {
    await pgDatabase?.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 40_000);
