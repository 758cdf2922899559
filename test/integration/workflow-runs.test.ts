import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForWorkflowRun, withCredits } from '../helpers/runs';
import type { components } from '../../generated/api';

type WorkflowCreate = components['schemas']['WorkflowCreate'];
let t: TestService;
beforeAll(async () => {
  t = await startService();
  await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Summariser'), slug: 'summariser' } });
});
afterAll(() => t.close());

let n = 0;
async function workflow(body: Omit<WorkflowCreate, 'kind' | 'slug' | 'name'>) {
  const slug = `wf-${++n}`;
  const res = await t.client().PUT('/api/build/workflows', { body: { kind: 'service.workflow/v1', slug, name: slug, ...body } });
  expect(res.response.status).toBe(201);
  return slug;
}

const startRun = (ref: string, input?: Record<string, unknown>, token?: string) =>
  t.client(token).POST('/api/build/workflows/{ref}/test', { params: { path: { ref } }, body: input === undefined ? {} : { input } });

test('fan-out and fan-in with templated arguments: JSON types kept, output rendered, every field present', async () => {
  const slug = await workflow({
    inputs: { count: { default: 2 }, label: { description: 'a name' } },
    steps: [
      { id: 'start', kind: 'tool', tool: 'core.echo', args: { count: '{{inputs.count}}', label: 'item {{inputs.label}}' } },
      { id: 'left', kind: 'tool', tool: 'kv.set', args: { key: 'left', value: '{{steps.start.output}}' }, after: ['start'] },
      { id: 'right', kind: 'tool', tool: 'core.sleep', args: { ms: '{{steps.start.output.count}}' }, after: ['start'] },
      { id: 'join', kind: 'tool', tool: 'core.echo', args: { both: ['{{steps.left.output.key}}', '{{steps.right.output}}'] }, after: ['left', 'right'] },
    ],
    output: 'slept {{steps.right.output.slept_ms}} ms, stored {{steps.left.output.key}}',
  });
  const started = await startRun(slug, { label: 'A' });
  expect(started.response.status).toBe(202);
  expect(started.data!.data).toEqual({ accepted: true, run_id: expect.any(String), status: 'queued' });
  const run = await waitForWorkflowRun(t, started.data!.data.run_id);
  expect(run).toMatchObject({
    status: 'succeeded',
    source: 'test',
    current_step: null,
    input: { count: 2, label: 'A' },
    output: 'slept 2 ms, stored left',
    error: null,
    started_by: 'user-1',
    warning: expect.stringContaining('third parties'),
  });
  expect(run.workflow_version_id).toBe(`${run.workflow_id}@1`);
  expect(run.step_results.start!.output).toEqual({ count: 2, label: 'item A' });
  expect(run.step_results.right!.output).toEqual({ slept_ms: 2 });
  expect(run.step_results.join!.output).toEqual({ both: ['left', { slept_ms: 2 }] });
  for (const result of Object.values(run.step_results)) {
    expect(result.status).toBe('succeeded');
    expect(result.started_at! <= result.finished_at!).toBe(true);
  }
  expect(run.step_results.join!.started_at! >= run.step_results.right!.finished_at!).toBe(true);
  expect(await t.service.store.kv.get('ws-1', 'left')).toEqual({ count: 2, label: 'item A' });
});

test('a failing step fails the run; its dependants are skipped, independent steps still run', async () => {
  const slug = await workflow({
    steps: [
      { id: 'boom', kind: 'tool', tool: 'core.fail', args: { message: 'no luck' } },
      { id: 'after-boom', kind: 'tool', tool: 'core.echo', after: ['boom'] },
      { id: 'further', kind: 'tool', tool: 'core.echo', after: ['after-boom'] },
      { id: 'independent', kind: 'tool', tool: 'time.now' },
    ],
    output: '{{steps.further.output}}',
  });
  const before = await t.service.store.workspaces.credits('ws-1', 0);
  const run = await waitForWorkflowRun(t, (await startRun(slug)).data!.data.run_id);
  expect(run.status).toBe('failed');
  expect(run.error).toBe("step 'boom' failed: no luck");
  expect(run.output).toBeNull();
  expect(Object.fromEntries(Object.entries(run.step_results).map(([id, r]) => [id, r.status]))).toEqual({
    boom: 'failed',
    'after-boom': 'skipped',
    further: 'skipped',
    independent: 'succeeded',
  });
  expect(run.step_results['after-boom']!.error).toBe("skipped: step 'boom' did not succeed");
  // 4 credits reserved, 2 steps executed: 2 spent, 2 returned.
  expect(await t.service.store.workspaces.credits('ws-1', 0)).toBe(before - 2);
});

test('an agent step runs the named agent with its rendered prompt', async () => {
  const slug = await workflow({
    inputs: { topic: {} },
    steps: [{ id: 'ask', kind: 'agent', agent: 'summariser', prompt: 'Summarise {{inputs.topic}}' }],
    output: '{{steps.ask.output}}',
  });
  const run = await waitForWorkflowRun(t, (await startRun(slug, { topic: 'billing' })).data!.data.run_id);
  expect(run.status).toBe('succeeded');
  expect(run.step_results.ask!.output).toBe('Summarise billing');
  expect(run.output).toBe('Summarise billing');
});

test('an agent step runs the agent as stored when the run was accepted, whatever is written to it during the run', async () => {
  const created = await t.client().PUT('/api/build/agents', {
    body: {
      ...minimalAgent('Versioned'),
      slug: 'versioned',
      max_steps: 3,
      tools: { apps: ['kv'], connections: 'all', disabled_tools: [], approval: 'destructive' },
    },
  });
  const agent = created.data!.data.document;
  const slug = await workflow({
    steps: [
      { id: 'wait', kind: 'tool', tool: 'core.sleep', args: { ms: 1500 } },
      { id: 'store', kind: 'agent', agent: 'versioned', prompt: '/call kv.set {"key":"snapshot-proof","value":1}', after: ['wait'] },
    ],
  });
  const started = await startRun(slug);
  expect(started.response.status).toBe(202);
  // While the first step sleeps: the agent loses the kv app, then is archived.
  const replaced = await t.client().PUT('/api/build/agents/{ref}', {
    params: { path: { ref: 'versioned' }, header: { 'If-Match': `"${agent.updated_at}"` } },
    body: { ...agent, tools: { ...agent.tools, apps: [] } },
  });
  expect(replaced.response.status).toBe(200);
  const archived = await t.client().POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: 'versioned' }, header: { 'If-Match': `"${replaced.data!.data.document.updated_at}"` } },
    body: { status: 'archived' },
  });
  expect(archived.response.status).toBe(200);
  const run = await waitForWorkflowRun(t, started.data!.data.run_id);
  expect(run.status).toBe('succeeded');
  expect(await t.service.store.kv.get('ws-1', 'snapshot-proof')).toBe(1); // the accepted version had kv

  // Archived now: a new run is refused at acceptance, naming the step; nothing is queued or charged.
  const before = await t.service.store.workspaces.credits('ws-1', 0);
  const refused = await startRun(slug);
  expect(refused.response.status).toBe(409);
  expect(refused.error).toEqual({
    error: "steps[1] ('store'): agent 'versioned' is archived; set its status to draft or active, or change the step, to run this workflow",
    run_id: null,
  });
  expect(await t.service.store.workspaces.credits('ws-1', 0)).toBe(before);
}, 15_000);

test('invalid arguments after rendering fail the step with the argument path', async () => {
  const slug = await workflow({ inputs: { ms: {} }, steps: [{ id: 'nap', kind: 'tool', tool: 'core.sleep', args: { ms: '{{inputs.ms}}' } }] });
  const run = await waitForWorkflowRun(t, (await startRun(slug, { ms: 'soon' })).data!.data.run_id);
  expect(run.status).toBe('failed');
  expect(run.step_results.nap!.error).toBe('invalid arguments for core.sleep: args.ms: must be a whole number');
});

test('input: unknown names and missing inputs without a default are 400; nothing is queued', async () => {
  const slug = await workflow({ inputs: { needed: {} }, steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] });
  const unknown = await startRun(slug, { needed: 1, extra: true });
  expect(unknown.response.status).toBe(400);
  expect(unknown.error).toEqual({ error: `body.input.extra: not an input of workflow '${slug}' (declared: needed)` });
  const missing = await startRun(slug, {});
  expect(missing.error).toEqual({ error: 'body.input.needed: required: the input has no default' });
  const notObject = await t.client().POST('/api/build/workflows/{ref}/test', { params: { path: { ref: slug } }, body: { input: 5 } as never });
  expect(notObject.error).toEqual({ error: 'body.input: must be of type object' });
});

test('a disabled workflow refuses test runs with 409 and run_id null', async () => {
  const slug = await workflow({ enabled: false, steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] });
  const res = await startRun(slug);
  expect(res.response.status).toBe(409);
  expect(res.error).toEqual({ error: `workflow '${slug}' is disabled; set enabled to true to test it`, run_id: null });
});

test('a balance below the number of steps is refused and recorded', async () => {
  const slug = await workflow({
    steps: [
      { id: 'a', kind: 'tool', tool: 'core.echo' },
      { id: 'b', kind: 'tool', tool: 'core.echo' },
    ],
  });
  await withCredits(t, 'ws-1', 1, async () => {
    const res = await startRun(slug);
    expect(res.response.status).toBe(409);
    const body = res.error as { error: string; run_id: string };
    expect(body.error).toBe('insufficient credits: the run needs at least 2, the workspace has 1');
    const run = await t.client().GET('/api/build/workflow-runs/{runId}', { params: { path: { runId: body.run_id } } });
    expect(run.data!.data).toMatchObject({ status: 'refused', error: body.error, started_at: null, finished_at: expect.any(String) });
    expect(await t.service.store.workspaces.credits('ws-1', 0)).toBe(1);
  });
});

test('a run is readable only by its starter', async () => {
  const slug = await workflow({ steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] });
  const runId = (await startRun(slug)).data!.data.run_id;
  await waitForWorkflowRun(t, runId);
  for (const token of [t.token({ user: 'other' }), t.token({ workspace: 'ws-2' })]) {
    expect((await t.client(token).GET('/api/build/workflow-runs/{runId}', { params: { path: { runId } } })).response.status).toBe(404);
  }
  expect((await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId } } })).response.status).toBe(404);
});

test('a running run shows its progress to pollers within the progress interval: finished steps and the step it is on', async () => {
  const slug = await workflow({
    steps: [
      { id: 'first', kind: 'tool', tool: 'core.echo', args: { n: 1 } },
      { id: 'nap', kind: 'tool', tool: 'core.sleep', args: { ms: 1500 }, after: ['first'] },
    ],
  });
  const started = await startRun(slug);
  const runId = started.data!.data.run_id;
  const poll = async () => (await t.client().GET('/api/build/workflow-runs/{runId}', { params: { path: { runId } } })).data!.data;
  await new Promise((resolve) => setTimeout(resolve, 600)); // well past PROGRESS_INTERVAL_MS (100), well before the nap ends
  const midway = await poll();
  expect(midway.status).toBe('running');
  expect(midway.current_step).toBe('nap');
  expect(midway.step_results.first).toMatchObject({ status: 'succeeded', output: { n: 1 } });
  expect(midway.step_results.nap?.status ?? 'pending').not.toBe('succeeded');
  const done = await waitForWorkflowRun(t, runId);
  expect(done.status).toBe('succeeded');
  expect(done.step_results.nap!.output).toEqual({ slept_ms: 1500 });
});
