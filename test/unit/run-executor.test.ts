// One run executed to its end against a real SQLite store and the built-in scripted model: a
// workflow's steps, an agent's tool calls and parking, a stop, and a run that cannot be executed.
import { createAppRegistry } from '../../src/apps/registry';
import { createLogger } from '../../src/log';
import { createModelRegistry } from '../../src/runtime/models';
import { DEFAULT_RUN_LIMITS } from '../../src/runtime/limits';
import { ExecutingRuns } from '../../src/runtime/runner/executing-runs';
import { createRunExecutor, type RunExecutor } from '../../src/runtime/runner/run-executor';
import type { QueuedRun } from '../../src/runtime/runner';
import type { Workflow } from '../../src/domain/types';
import { claimedRun, openTempStore, queueRun, scriptedAgent, toolWorkflow, type TempStore } from '../helpers/run-store';
import { NO_METRICS } from '../../src/metrics';

const lease = { owner: 'executor-test', ms: 60_000 };
let t: TempStore;
let executing: ExecutingRuns;
let execute: RunExecutor;
beforeEach(() => {
  t = openTempStore();
  executing = new ExecutingRuns();
  execute = createRunExecutor({
    runs: t.store.runs,
    kv: t.store.kv,
    models: createModelRegistry({ openai: null }),
    apps: createAppRegistry({ store: t.store, credentials: { headersFor: async () => ({}) }, allowPrivate: false }),
    http: { timeoutMs: 1000, maxBytes: 1024, allowPrivate: false },
    limits: DEFAULT_RUN_LIMITS,
    executing,
    logger: createLogger('silent'),
    metrics: NO_METRICS,
  });
});
afterEach(() => t.close());

const claimed = (run: Promise<QueuedRun>) => claimedRun(t.store, run, lease);
const row = async (id: string) => (await t.store.runs.find(id))!;

test("a workflow run executes its steps in the run's workspace, pays each, and records its end", async () => {
  const run = await claimed(
    queueRun(
      t.store,
      toolWorkflow([
        { id: 'a', tool: 'core.echo', args: { value: 1 } },
        { id: 'b', tool: 'kv.set', args: { key: 'k', value: 'v' } },
      ]),
      { workspaceId: 'ws-9' },
    ),
  );
  await execute(run);
  const ended = await row(run.id);
  expect(ended).toMatchObject({ status: 'succeeded', credits_spent: 2, error: null });
  expect(Object.values(JSON.parse(ended.state).step_results).map((r) => (r as { status: string }).status)).toEqual(['succeeded', 'succeeded']);
  expect(await t.store.kv.get('ws-9', 'k')).toBe('v');
  expect(await t.store.kv.get('ws-1', 'k')).toBeUndefined();
  expect(executing.size).toBe(0);
});

test("a workflow's agent step runs the agent recorded at acceptance; one not recorded fails the step", async () => {
  const base = toolWorkflow([]);
  const withStep = (agent: string) => ({ ...base, steps: [{ id: 'ask', kind: 'agent', agent, prompt: 'hello there', after: [] }] }) as unknown as Workflow;
  const recorded = await claimed(queueRun(t.store, withStep('helper')));
  await execute({ ...recorded, stepAgents: { helper: scriptedAgent() } });
  expect(JSON.parse((await row(recorded.id)).state).step_results.ask).toMatchObject({ status: 'succeeded', output: 'hello there' });

  const missing = await claimed(queueRun(t.store, withStep('gone')));
  await execute(missing);
  expect(await row(missing.id)).toMatchObject({ status: 'failed', error: "step 'ask' failed: agent 'gone' was not recorded when the run was accepted" });
});

test('an agent run answers, or parks when the approval policy holds a call', async () => {
  const agent = scriptedAgent({ tools: { apps: ['kv', 'core'], connections: 'all', disabled_tools: [], approval: 'write' } });
  const answered = await claimed(queueRun(t.store, agent, { prompt: 'just say this' }));
  await execute(answered);
  const done = await row(answered.id);
  expect(done).toMatchObject({ status: 'succeeded' });
  expect(JSON.parse(done.state).final_text).toBe('just say this');

  const held = await claimed(queueRun(t.store, agent, { prompt: '/call kv.set {"key":"k","value":1}' }));
  await execute(held);
  expect(await row(held.id)).toMatchObject({ status: 'awaiting_approval', approval_expires_at: expect.any(String) });
  expect(await t.store.kv.get('ws-1', 'k')).toBeUndefined();
});

test('a run asked to stop while it executes ends cancelled before its next step', async () => {
  const run = await claimed(
    queueRun(
      t.store,
      toolWorkflow([
        { id: 'nap', tool: 'core.sleep', args: { ms: 200 } },
        { id: 'after', tool: 'kv.set', args: { key: 'after', value: 1 } },
      ]),
    ),
  );
  const executed = execute(run);
  const stopped = executing.requestStop(run.id);
  expect(stopped).not.toBeNull();
  await stopped;
  await executed;
  expect(await row(run.id)).toMatchObject({ status: 'cancelled' });
  expect(await t.store.kv.get('ws-1', 'after')).toBeUndefined();
});

test('a run that cannot be executed (its document unreadable) is recorded as failed, and the executor does not throw', async () => {
  const run = await claimed(queueRun(t.store, toolWorkflow([{ id: 'a', tool: 'core.echo' }])));
  await execute({ ...run, snapshot: undefined });
  expect(await row(run.id)).toMatchObject({ status: 'failed', error: 'internal error while executing the run', credits_spent: 0 });
  expect(executing.size).toBe(0);
});
