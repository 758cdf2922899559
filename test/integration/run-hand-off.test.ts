// Runs accepted by this process are handed to the workers in memory; past the hand-off limit they
// wait in the database's queue. Either way each run executes once, in the order it was accepted.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '../../src/log';
import { createModelRegistry } from '../../src/runtime/models';
import { createRunner, type QueuedRun } from '../../src/runtime/runner';
import { initialWorkflowState } from '../../src/runtime/workflow-executor';
import { startService } from '../helpers/service';

test('runs beyond the hand-off limit run from the database: every run once, in acceptance order', async () => {
  const hits: string[] = [];
  const target = http.createServer((req, res) => {
    hits.push(req.url as string);
    res.end('ok');
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const t = await startService({ HTTP_TOOL_ALLOW_PRIVATE: 'true', DEFAULT_CREDITS: '100' });
  try {
    const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/{{inputs.n}}`;
    const created = await t.client().PUT('/api/build/workflows', {
      body: { kind: 'service.workflow/v1', slug: 'call', name: 'Call', inputs: { n: {} }, steps: [{ id: 'call', kind: 'tool', tool: 'http.request', args: { method: 'GET', url } }] },
    });
    expect(created.response.status).toBe(201);
    const workflow = (await t.service.store.workflows.find('ws-1', 'call'))!;
    // A runner of its own with one worker and room for two runs in memory (the service's runner
    // is told of none of these runs).
    const runner = createRunner({
      store: t.service.store,
      models: createModelRegistry(t.config),
      http: { timeoutMs: 5000, maxResponseBytes: 1024, allowPrivate: true },
      workers: 1,
      logger: createLogger('silent'),
      handOffLimit: 2,
    });
    const ids = [1, 2, 3, 4, 5].map((n) => `00000000-0000-4000-8000-00000000000${n}`);
    const runs: QueuedRun[] = ids.map((id, i) => ({
      id, kind: 'workflow', workspaceId: 'ws-1', snapshot: workflow.document, request: { input: { n: i + 1 } }, state: initialWorkflowState(workflow.document), creditsReserved: 1, creditsSpent: 0,
    }));
    for (const run of runs) {
      const outcome = await t.service.store.runs.accept(
        { id: run.id, kind: 'workflow', workspaceId: 'ws-1', startedBy: 'user-1', targetId: workflow.id, targetVersion: workflow.version, source: 'test', request: run.request, snapshotJson: workflow.json, state: run.state, minimumCost: 1, initialCredits: 100 },
        () => 'refused',
      );
      expect(outcome.status).toBe('queued');
    }
    for (const run of runs) runner.notify(run); // the first two wait in memory (one is taken at once), the rest in the database
    await runner.idle();

    expect(hits).toEqual(['/1', '/2', '/3', '/4', '/5']);
    for (const id of ids) {
      const run = await t.client().GET('/api/build/workflow-runs/{runId}', { params: { path: { runId: id } } });
      expect(run.data!.data).toMatchObject({ status: 'succeeded', step_results: { call: { status: 'succeeded' } } });
    }
    expect(await t.service.store.workspaces.credits('ws-1', 0)).toBe(95);
  } finally {
    await t.close();
    target.close();
  }
});
