// Runs that a stopped process left `running` are finished as failed at the next start, with a
// message that says so, and their unspent credits go back to the workspace.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteStore } from '../../src/store/sqlite';
import { INTERRUPTED, SHUT_DOWN } from '../../src/runtime/runner';
import { startService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun, waitForWorkflowRunStatus } from '../helpers/runs';

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
      snapshotJson: 'null',
      state: { current_step: 'a', step_results: {}, output: null },
      minimumCost: 3,
      initialCredits: 10,
    },
    () => 'refused',
  );
  expect(accepted.status).toBe('queued');
  await store.runs.claimNext({ owner: 'a process that dies', ms: 60_000 }, 64);
  await store.runs.saveState('11111111-2222-4333-8444-555555555555', () => ({ state: { current_step: 'a', step_results: {}, output: null }, spent: 1 }));
  await store.close(); // the process "dies" here: the run is left running, 3 reserved, 1 spent

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

test('a run that throws is recorded as failed and the workers go on with the next run', async () => {
  const t = await startService();
  try {
    // A run whose snapshot cannot be read or executed (as if the row were damaged).
    await t.service.store.runs.accept(
      {
        id: '22222222-3333-4444-8555-666666666666',
        kind: 'agent',
        workspaceId: 'ws-1',
        startedBy: 'user-1',
        targetId: 'gone',
        targetVersion: 1,
        source: 'test',
        request: { prompt: 'hi' },
        snapshotJson: '{"slug": "cut off',
        state: { transcript: [], tool_calls: [], final_text: null, steps: 0 },
        minimumCost: 1,
        initialCredits: 10,
      },
      () => 'refused',
    );
    t.service.runner.notify();
    await t.service.runner.idle();
    const broken = await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId: '22222222-3333-4444-8555-666666666666' } } });
    expect(broken.data!.data).toMatchObject({ status: 'failed', error: 'internal error while executing the run', credits: 0 });

    const created = await t.client().PUT('/api/build/agents', { body: minimalAgent('After') });
    const next = await t
      .client()
      .POST('/api/build/agents/{ref}/test', { params: { path: { ref: created.data!.data.document.id } }, body: { prompt: 'still working' } });
    expect((await waitForAgentRun(t, next.data!.data.run_id)).status).toBe('succeeded');
  } finally {
    await t.close();
  }
});

test('at shutdown, a run still executing after the grace period is handed back at once: failed as shut down, credits returned, its later steps never run', async () => {
  const t = await startService();
  try {
    const created = await t.client().PUT('/api/build/workflows', {
      body: {
        kind: 'service.workflow/v1',
        slug: 'long',
        name: 'Long',
        steps: [
          { id: 'nap', kind: 'tool', tool: 'core.sleep', args: { ms: 1500 } },
          { id: 'after', kind: 'tool', tool: 'kv.set', args: { key: 'after-nap', value: 1 }, after: ['nap'] },
        ],
      },
    });
    expect(created.response.status).toBe(201);
    const before = await t.service.store.workspaces.credits('ws-1', t.config.defaultCredits);
    const started = await t.client().POST('/api/build/workflows/{ref}/test', { params: { path: { ref: 'long' } }, body: {} });
    const runId = started.data!.data.run_id as string;
    await waitForWorkflowRunStatus(t, runId, 'running');
    await t.service.runner.stop(100); // the grace period passes with the nap in flight
    const run = (await t.client().GET('/api/build/workflow-runs/{runId}', { params: { path: { runId } } })).data!.data;
    expect(run).toMatchObject({ status: 'failed', error: SHUT_DOWN, finished_at: expect.any(String) });
    // The run reserved its two steps and was charged the one it started; the other came back.
    expect(await t.service.store.workspaces.credits('ws-1', 0)).toBe(before - 1);
    await new Promise((resolve) => setTimeout(resolve, 1800)); // the nap ends: its worker stops, writing nothing
    expect(await t.service.store.kv.get('ws-1', 'after-nap')).toBeUndefined();
    expect((await t.client().GET('/api/build/workflow-runs/{runId}', { params: { path: { runId } } })).data!.data).toMatchObject({
      status: 'failed',
      error: SHUT_DOWN,
    });
  } finally {
    await t.close();
  }
}, 20_000);
