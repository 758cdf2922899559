// Workflows as an agent's tools (issue 45): a call of `workflows.<slug>` starts a child workflow
// run linked both ways, waits for it within RUN_WORKFLOW_TOOL_WAIT_SECONDS, and answers with its
// output or error; chains are bounded by depth and never repeat a workflow; the approval policy
// judges the tool by its steps; cancelling the caller cancels the child. One service for the file.
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun, waitForWorkflowRun } from '../helpers/runs';
import type { components } from '../../generated/api';

type Schemas = components['schemas'];
type Step = Schemas['WorkflowCreate']['steps'][number];

let t: TestService;
beforeAll(async () => {
  t = await startService({ RUN_WORKFLOW_TOOL_WAIT_SECONDS: '2' });
  await t.service.store.workspaces.setCredits('ws-1', 100_000);
});
afterAll(() => t.close());

let n = 0;
async function workflow(steps: Step[], extra: Partial<Schemas['WorkflowCreate']> = {}): Promise<string> {
  const slug = `flow-${++n}`;
  const res = await t.client().PUT('/api/build/workflows', { body: { kind: 'service.workflow/v1', slug, name: `Flow ${n}`, steps, ...extra } });
  expect(res.response.status).toBe(201);
  return slug;
}

async function agent(workflows: string[], approval: 'write' | 'destructive' = 'write', maxSteps = 4): Promise<string> {
  const slug = `caller-${++n}`;
  const body = { ...minimalAgent(`Caller ${n}`), slug, workflows, max_steps: maxSteps, tools: { ...minimalAgent().tools, approval } };
  const res = await t.client().PUT('/api/build/agents', { body });
  expect(res.error).toBeUndefined();
  return slug;
}

async function runAgent(slug: string, prompt: string, token?: string) {
  const res = await t.client(token).POST('/api/build/agents/{ref}/test', { params: { path: { ref: slug } }, body: { prompt } });
  expect(res.response.status).toBe(202);
  return res.data!.data.run_id;
}

const readWorkflowRun = (runId: string, token?: string) => t.client(token).GET('/api/build/workflow-runs/{runId}', { params: { path: { runId } } });

test('a call starts a child workflow run linked both ways, returns its output, and the child spends its own credits', async () => {
  const flow = await workflow(
    [
      { id: 'look', kind: 'tool', tool: 'core.echo', args: { order: '{{inputs.order_id}}', note: '{{inputs.note}}' } },
      { id: 'again', kind: 'tool', tool: 'core.echo', args: {}, after: ['look'] },
    ],
    {
      description: 'Looks an order up.',
      inputs: { order_id: { description: 'The order.' }, note: { default: 'none' } },
      output: 'order {{steps.look.output.order}}',
    },
  );
  const caller = await agent([flow]);
  const before = await t.service.store.workspaces.credits('ws-1', 0);
  const runId = await runAgent(caller, `/call workflows.${flow} {"order_id":"A-1"}`);
  const run = await waitForAgentRun(t, runId);
  expect(run.status).toBe('succeeded');
  const [call] = run.tool_calls;
  expect(call).toMatchObject({ tool: `workflows.${flow}`, status: 'succeeded', child_run_id: expect.any(String) });
  expect(call!.output).toEqual({ run_id: call!.child_run_id, status: 'succeeded', output: 'order A-1' });

  const child = (await readWorkflowRun(call!.child_run_id as string)).data!.data;
  expect(child).toMatchObject({
    status: 'succeeded',
    source: 'tool',
    parent: { run_id: runId, kind: 'agent', tool_call_id: call!.id, depth: 1 },
    input: { order_id: 'A-1', note: 'none' },
    output: 'order A-1',
    started_by: 'user-1',
  });
  // Two model steps of the agent and two steps of the child.
  expect(await t.service.store.workspaces.credits('ws-1', 0)).toBe(before - 4);
  // The chain of a test is its starter's alone: another member and another workspace see no child.
  expect((await readWorkflowRun(child.id, t.token({ user: 'user-2' }))).response.status).toBe(404);
  expect((await readWorkflowRun(child.id, t.token({ workspace: 'ws-2' }))).response.status).toBe(404);
  const listed = await t.client().GET('/api/build/workflow-runs', { params: { query: { source: 'tool' } } });
  expect(listed.data!.data.map((r) => r.id)).toContain(child.id);
  const othersList = await t.client(t.token({ user: 'user-2' })).GET('/api/build/workflow-runs', { params: { query: { source: 'tool' } } });
  expect(othersList.data!.data.map((r) => r.id)).not.toContain(child.id);
});

test("arguments are checked against the workflow's inputs; a failing workflow's error comes back to the model", async () => {
  const failing = await workflow([{ id: 'boom', kind: 'tool', tool: 'core.fail', args: { message: 'no stock' } }], { inputs: { sku: {} } });
  const caller = await agent([failing]);
  const run = await waitForAgentRun(t, await runAgent(caller, `/call workflows.${failing} {"wrong":1}\n/call workflows.${failing} {"sku":"x"}`));
  const [bad, failed] = run.tool_calls;
  expect(bad).toMatchObject({ status: 'failed', error: expect.stringMatching(/invalid arguments for workflows\.flow-\d+: .*sku/) });
  expect(bad!.child_run_id).toBeUndefined();
  expect(failed).toMatchObject({ status: 'failed', child_run_id: expect.any(String) });
  expect(failed!.error).toBe(`workflow '${failing}' failed (run ${failed!.child_run_id}): step 'boom' failed: no stock`);
});

test('a disabled, a deleted and an unlisted workflow are refused, each saying why', async () => {
  const disabled = await workflow([{ id: 'a', kind: 'tool', tool: 'core.echo', args: {} }], { enabled: false });
  const doomed = await workflow([{ id: 'a', kind: 'tool', tool: 'core.echo', args: {} }]);
  const unlisted = await workflow([{ id: 'a', kind: 'tool', tool: 'core.echo', args: {} }]);
  const caller = await agent([disabled, doomed]);
  expect((await t.client().DELETE('/api/build/workflows/{ref}', { params: { path: { ref: doomed } } })).response.status).toBe(200);
  const prompt = [disabled, doomed, unlisted].map((slug) => `/call workflows.${slug} {}`).join('\n');
  const run = await waitForAgentRun(t, await runAgent(caller, prompt));
  expect(run.tool_calls.map((c) => [c.status, c.error])).toEqual([
    ['refused', `workflow '${disabled}' is disabled; it can be called once its enabled is set to true`],
    ['refused', `workflow '${doomed}' no longer exists where this agent can reach it (deleted, or moved to another team's space)`],
    ['refused', `workflows.${unlisted} is not a workflow this agent lists in its workflows`],
  ]);
});

test('an agent may not list a workflow the workspace does not have (semantic check)', async () => {
  const res = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Lost'), workflows: ['no-such-flow'] } });
  expect(res.response.status).toBe(400);
  expect(res.error!.error).toContain('body.workflows[0]');
});

test('the approval policy judges a workflow tool by its steps: a writing workflow is held under write, run under destructive', async () => {
  const writes = await workflow([{ id: 'save', kind: 'tool', tool: 'kv.set', args: { key: 'wf-tool', value: 1 } }]);
  const reads = await workflow([{ id: 'read', kind: 'tool', tool: 'kv.get', args: { key: 'wf-tool' } }]);
  const careful = await agent([writes, reads], 'write');
  const runId = await runAgent(careful, `/call workflows.${reads} {}\n/call workflows.${writes} {}`);
  const parked = await waitForAgentRun(t, runId);
  expect(parked.status).toBe('awaiting_approval');
  expect(parked.tool_calls.map((c) => c.status)).toEqual(['succeeded', 'awaiting_approval']);
  expect(parked.tool_calls[1]!.child_run_id).toBeUndefined(); // nothing started before the decision
  const decided = await t.client().POST('/api/build/runs/{runId}/approvals/{callId}', {
    params: { path: { runId, callId: parked.tool_calls[1]!.id } },
    body: { decision: 'approve' },
  });
  expect(decided.response.status).toBe(200);
  const done = await waitForAgentRun(t, runId);
  expect(done.status).toBe('succeeded');
  expect(done.tool_calls[1]).toMatchObject({ status: 'succeeded', child_run_id: expect.any(String) });
  expect(await t.service.store.kv.get('ws-1', 'wf-tool')).toBe(1);

  const bold = await agent([writes], 'destructive');
  const direct = await waitForAgentRun(t, await runAgent(bold, `/call workflows.${writes} {}`));
  expect(direct.tool_calls[0]!.status).toBe('succeeded');
});

/** A workflow whose one agent step has `agentSlug` run `prompt`. */
const agentStepFlow = (agentSlug: string, prompt: string) =>
  workflow([{ id: 'ask', kind: 'agent', agent: agentSlug, prompt }], { output: '{{steps.ask.output}}' });

test('chains: an agent step of a child may call a workflow in turn, to a depth of 3; a cycle is refused', async () => {
  // caller → flow1 (depth 1) → agent a1 → flow2 (2) → agent a2 → flow3 (3) → agent a3 → flow4: refused (depth 4).
  const leaf = await workflow([{ id: 'a', kind: 'tool', tool: 'core.echo', args: {} }], { output: 'leaf' });
  const a3 = await agent([leaf]);
  const flow3 = await agentStepFlow(a3, `/call workflows.${leaf} {}`);
  const a2 = await agent([flow3]);
  const flow2 = await agentStepFlow(a2, `/call workflows.${flow3} {}`);
  const a1 = await agent([flow2]);
  const flow1 = await agentStepFlow(a1, `/call workflows.${flow2} {}`);
  const caller = await agent([flow1]);
  const run = await waitForAgentRun(t, await runAgent(caller, `/call workflows.${flow1} {}`), undefined, 15_000);
  expect(run.status).toBe('succeeded');
  const first = (await readWorkflowRun(run.tool_calls[0]!.child_run_id as string)).data!.data;
  expect(first.parent).toMatchObject({ kind: 'agent', depth: 1 });
  expect(first.output).toContain('depth limit: workflow tool calls nest at most 3 deep, and this call would start a run at depth 4');

  // A workflow whose agent step calls the same workflow: refused as a cycle at once.
  const loopAgentSlug = `looper-${++n}`;
  const loopFlow = `loop-${n}`;
  const created = await t.client().PUT('/api/build/workflows', {
    body: { kind: 'service.workflow/v1', slug: loopFlow, name: 'Loop', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo', args: {} }] },
  });
  expect(created.response.status).toBe(201);
  const body = { ...minimalAgent('Looper'), slug: loopAgentSlug, workflows: [loopFlow], max_steps: 3 };
  expect((await t.client().PUT('/api/build/agents', { body })).response.status).toBe(201);
  const current = (await t.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: loopFlow } } })).data!.data;
  const replaced = await t.client().PUT('/api/build/workflows/{ref}', {
    params: { path: { ref: loopFlow }, header: { 'If-Match': `"${current.updated_at}"` } },
    body: { ...current, steps: [{ id: 'ask', kind: 'agent', agent: loopAgentSlug, prompt: `/call workflows.${loopFlow} {}` }], output: '{{steps.ask.output}}' },
  } as never);
  expect(replaced.response.status).toBe(200);
  const looped = await waitForAgentRun(t, await runAgent(loopAgentSlug, `/call workflows.${loopFlow} {}`), undefined, 10_000);
  const child = (await readWorkflowRun(looped.tool_calls[0]!.child_run_id as string)).data!.data;
  expect(child.status).toBe('succeeded');
  expect(child.output).toContain(`cycle: workflow '${loopFlow}' is already running in this chain`);
});

test('past the wait the call answers with the child run and that it goes on; the child ends on its own', async () => {
  const slow = await workflow([{ id: 'nap', kind: 'tool', tool: 'core.sleep', args: { ms: 3500 } }], { output: 'rested' });
  const caller = await agent([slow]);
  const run = await waitForAgentRun(t, await runAgent(caller, `/call workflows.${slow} {}`), undefined, 10_000);
  expect(run.status).toBe('succeeded');
  const output = run.tool_calls[0]!.output as { run_id: string; status: string; note: string };
  expect(output).toMatchObject({ status: 'running', output: null, note: expect.stringContaining('still running after 2 s') });
  const child = await waitForWorkflowRun(t, output.run_id, undefined, 10_000);
  expect(child).toMatchObject({ status: 'succeeded', output: 'rested' });
});

test('cancelling the calling run cancels the child it waits for', async () => {
  const slow = await workflow([
    { id: 'nap', kind: 'tool', tool: 'core.sleep', args: { ms: 1500 } },
    { id: 'more', kind: 'tool', tool: 'core.sleep', args: { ms: 1500 }, after: ['nap'] },
  ]);
  const caller = await agent([slow]);
  const runId = await runAgent(caller, `/call workflows.${slow} {}`);
  let children: string[] = [];
  for (const deadline = Date.now() + 5000; !children.length && Date.now() < deadline; ) {
    children = await t.service.store.runs.activeChildren(runId);
    if (!children.length) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(children).toHaveLength(1);
  const cancelled = await t.client().POST('/api/build/runs/{runId}/cancel', { params: { path: { runId } } });
  expect([200, 202]).toContain(cancelled.response.status);
  const child = await waitForWorkflowRun(t, children[0]!, undefined, 5000);
  expect(child.status).toBe('cancelled');
  expect(child.cancelled_by).toBe('user-1');
  expect((await waitForAgentRun(t, runId, undefined, 5000)).status).toBe('cancelled');
});
