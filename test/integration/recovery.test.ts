// Runs that a stopped process left `running` are finished as failed at the next start, with a
// message that says so, and their unspent credits go back to the workspace.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteStore } from '../../src/store';
import { INTERRUPTED } from '../../src/runtime/runner';
import { startService } from '../helpers/service';

test('a run cut off while running is failed with a message at the next start', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-recovery-'));
  const databasePath = path.join(dir, 'build.db');
  const store = openSqliteStore(databasePath);
  const accepted = await store.runs.accept(
    {
      id: '11111111-2222-4333-8444-555555555555',
      kind: 'workflow',
      workspaceId: 'ws-1',
      startedBy: 'user-1',
      targetId: 'wf',
      targetVersion: 1,
      source: 'test',
      request: { input: {} },
      snapshot: null,
      state: { current_step: 'a', step_results: {}, output: null },
      minimumCost: 3,
      initialCredits: 10,
    },
    () => 'refused',
  );
  expect(accepted.status).toBe('queued');
  await store.runs.claimNext(new Date().toISOString());
  expect(await store.runs.spend('11111111-2222-4333-8444-555555555555', 1)).toBe(true);
  store.close(); // the process "dies" here: the run is left running, 3 reserved, 1 spent

  const t = await startService({ DATABASE_PATH: databasePath });
  try {
    const run = await t.client().GET('/api/build/workflow-runs/{runId}', { params: { path: { runId: '11111111-2222-4333-8444-555555555555' } } });
    expect(run.data!.data).toMatchObject({ status: 'failed', error: INTERRUPTED, finished_at: expect.any(String) });
    expect(await t.service.store.workspaces.credits('ws-1', 0)).toBe(9);
  } finally {
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
