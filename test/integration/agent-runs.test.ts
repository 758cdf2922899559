import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun, withCredits } from '../helpers/runs';
import type { components } from '../../generated/api';

type AgentCreate = components['schemas']['AgentCreate'];
let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

async function agent(overrides: Partial<AgentCreate> = {}) {
  const res = await t.client().PUT('/api/build/agents', {
    body: {
      ...minimalAgent(`Runner ${Math.random().toString(36).slice(2, 8)}`),
      max_steps: 10,
      tools: { apps: ['kv', 'core'], connections: 'all', disabled_tools: [], approval: 'destructive' },
      ...overrides,
    },
  });
  expect(res.response.status).toBe(201);
  return res.data!.data.document;
}

async function startRun(ref: string, prompt: string, token?: string) {
  return t.client(token).POST('/api/build/agents/{ref}/test', { params: { path: { ref } }, body: { prompt } });
}

test('a run of the scripted model calls kv tools, answers, and records every field', async () => {
  const doc = await agent();
  const started = await startRun(doc.slug, 'File it.\n/call kv.set {"key":"ticket:1","value":{"n":1}}\n/call kv.get {"key":"ticket:1"}');
  expect(started.response.status).toBe(202);
  expect(started.data!.data).toEqual({ accepted: true, run_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'queued' });

  const run = await waitForAgentRun(t, started.data!.data.run_id);
  expect(run).toMatchObject({
    id: started.data!.data.run_id,
    agent: { slug: doc.slug, name: doc.name },
    status: 'succeeded',
    version: 1,
    steps: 3,
    credits: 3,
    error: null,
    warning: expect.stringContaining('third parties'),
  });
  expect(run.tool_calls).toEqual([
    { id: 'call_1', tool: 'kv.set', args: { key: 'ticket:1', value: { n: 1 } }, status: 'succeeded', output: { key: 'ticket:1' }, error: null },
    { id: 'call_2', tool: 'kv.get', args: { key: 'ticket:1' }, status: 'succeeded', output: { key: 'ticket:1', value: { n: 1 } }, error: null },
  ]);
  expect(run.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
  expect(run.final_text).toBe('Called 2 tools.\nkv.set: {"key":"ticket:1"}\nkv.get: {"key":"ticket:1","value":{"n":1}}');
  for (const stamp of [run.started_at, run.run_started_at, run.finished_at]) expect(stamp).toMatch(/Z$/);
  expect(await t.service.store.kv.get('ws-1', 'ticket:1')).toEqual({ n: 1 });
});

test('without /call lines the scripted model repeats the prompt', async () => {
  const doc = await agent();
  const run = await waitForAgentRun(t, (await startRun(doc.slug, 'Hello there')).data!.data.run_id);
  expect(run).toMatchObject({ status: 'succeeded', final_text: 'Hello there', steps: 1, credits: 1, tool_calls: [] });
});

test('the approval policy holds calls: write holds writes, destructive holds destructive ones; a held call parks the run', async () => {
  const strict = await agent({ tools: { apps: ['kv'], connections: 'all', disabled_tools: [], approval: 'write' } });
  const held = await waitForAgentRun(t, (await startRun(strict.slug, '/call kv.set {"key":"held","value":1}\n/call kv.list {}')).data!.data.run_id);
  expect(held.status).toBe('awaiting_approval');
  expect(held.tool_calls).toEqual([
    {
      id: 'call_1',
      tool: 'kv.set',
      args: { key: 'held', value: 1 },
      status: 'awaiting_approval',
      output: null,
      error: null,
      approval: { decision: null, note: null, decided_by: null, decided_at: null },
    },
  ]);
  expect(held.approval_expires_at).toMatch(/Z$/);
  expect(await t.service.store.kv.get('ws-1', 'held')).toBeUndefined();

  const lenient = await agent();
  const run = await waitForAgentRun(
    t,
    (await startRun(lenient.slug, '/call kv.set {"key":"kept","value":1}\n/call kv.delete {"key":"kept"}')).data!.data.run_id,
  );
  expect(run.status).toBe('awaiting_approval');
  expect(run.tool_calls.map((c) => [c.tool, c.status])).toEqual([
    ['kv.set', 'succeeded'],
    ['kv.delete', 'awaiting_approval'],
  ]);
  expect(await t.service.store.kv.get('ws-1', 'kept')).toBe(1);
});

test('tools outside tools.apps or disabled are refused; bad arguments fail the call, not the run', async () => {
  const doc = await agent({ tools: { apps: ['core'], connections: 'all', disabled_tools: ['core.sleep'], approval: 'destructive' } });
  const run = await waitForAgentRun(
    t,
    (await startRun(doc.slug, '/call kv.get {"key":"x"}\n/call core.sleep {"ms":1}\n/call core.pick {"path":"a"}')).data!.data.run_id,
  );
  expect(run.status).toBe('succeeded');
  expect(run.tool_calls.map((c) => [c.tool, c.status, c.error])).toEqual([
    ['kv.get', 'refused', 'kv.get is not available to this agent (not in tools.apps, or disabled)'],
    ['core.sleep', 'refused', 'core.sleep is not available to this agent (not in tools.apps, or disabled)'],
    ['core.pick', 'failed', 'invalid arguments for core.pick: args.value: required'],
  ]);
});

test('max_steps ends a run that has not answered: failed, with the steps taken', async () => {
  const doc = await agent({ max_steps: 2 });
  const run = await waitForAgentRun(t, (await startRun(doc.slug, '/call core.echo {}\n/call core.echo {}\n/call core.echo {}')).data!.data.run_id);
  expect(run).toMatchObject({ status: 'failed', steps: 2, credits: 2, error: 'stopped after max_steps (2) model steps without a final answer' });
});

test('an archived agent refuses test runs with 409 and run_id null', async () => {
  const doc = await agent();
  await t
    .client()
    .POST('/api/build/agents/{ref}/status', { params: { path: { ref: doc.id }, header: { 'If-Match': `"${doc.updated_at}"` } }, body: { status: 'archived' } });
  const res = await startRun(doc.slug, 'hi');
  expect(res.response.status).toBe(409);
  expect(res.error).toEqual({ error: `agent '${doc.slug}' is archived; set its status to draft or active to test it`, run_id: null });
});

test('an unknown agent is 404; a prompt out of bounds is 400', async () => {
  expect((await startRun('nobody', 'hi')).response.status).toBe(404);
  const doc = await agent();
  const empty = await startRun(doc.slug, '');
  expect(empty.error).toEqual({ error: 'body.prompt: must be at least 1 character long' });
});

describe('credits', () => {
  test('no credits: 409 with the run_id of a recorded refusal the starter can read', async () => {
    const doc = await agent();
    await withCredits(t, 'ws-1', 0, async () => {
      const res = await startRun(doc.slug, 'hi');
      expect(res.response.status).toBe(409);
      const body = res.error as { error: string; run_id: string };
      expect(body.error).toBe('insufficient credits: the run needs at least 1, the workspace has 0');
      const run = await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId: body.run_id } } });
      expect(run.data!.data).toMatchObject({ status: 'refused', error: body.error, steps: null, credits: null, run_started_at: null });
    });
  });

  test('a run that exhausts the balance midway fails and the balance ends at zero', async () => {
    const doc = await agent();
    await withCredits(t, 'ws-1', 2, async () => {
      const run = await waitForAgentRun(t, (await startRun(doc.slug, '/call core.echo {}\n/call core.echo {}\n/call core.echo {}')).data!.data.run_id);
      expect(run).toMatchObject({ status: 'failed', steps: 2, credits: 2, error: 'credits exhausted after 2 model steps' });
      expect(await t.service.store.workspaces.credits('ws-1', 0)).toBe(0);
    });
  });

  test('concurrent runs never spend more than the balance; every refusal is recorded', async () => {
    const doc = await agent();
    await withCredits(t, 'ws-1', 5, async () => {
      const starts = await Promise.all(Array.from({ length: 12 }, () => startRun(doc.slug, 'hello')));
      const accepted = starts.filter((s) => s.response.status === 202);
      const refused = starts.filter((s) => s.response.status === 409);
      expect(accepted).toHaveLength(5);
      expect(refused).toHaveLength(7);
      for (const r of refused) {
        const runId = (r.error as { run_id: string }).run_id;
        expect((await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId } } })).data!.data.status).toBe('refused');
      }
      for (const a of accepted) expect((await waitForAgentRun(t, a.data!.data.run_id)).status).toBe('succeeded');
      expect(await t.service.store.workspaces.credits('ws-1', 0)).toBe(0);
    });
  });
});

describe('who can read a run', () => {
  test('only its starter: another user or workspace gets 404, and so does the other run endpoint', async () => {
    const doc = await agent();
    const runId = (await startRun(doc.slug, 'private')).data!.data.run_id;
    await waitForAgentRun(t, runId);
    for (const token of [t.token({ user: 'someone-else' }), t.token({ workspace: 'ws-other' })]) {
      const res = await t.client(token).GET('/api/build/runs/{runId}', { params: { path: { runId } } });
      expect(res.response.status).toBe(404);
      expect(res.error).toEqual({ error: `run '${runId}' not found: no agent run you may read has this id` });
    }
    expect((await t.client().GET('/api/build/workflow-runs/{runId}', { params: { path: { runId } } })).response.status).toBe(404);
  });
});
