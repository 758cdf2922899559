// Steering runs through the typed client: cancel (queued, running, parked, finished, twice),
// approvals that park and resume a run (approve, reject, twice, expiry), and the stored events
// (as JSON and as a stream resumed with Last-Event-ID).
import { startService, type TestService } from '../helpers/service';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun, waitForAgentRunStatus, waitForWorkflowRun, waitForWorkflowRunStatus } from '../helpers/runs';
import { readEventStream } from '../helpers/events';
import type { components } from '../../generated/api';

type AgentCreate = components['schemas']['AgentCreate'];
type RunEvent = components['schemas']['RunEvent'];

jest.setTimeout(30_000);
let t: TestService;
beforeAll(async () => {
  // One worker, so a run can be held queued behind another; approvals expire after 2 s.
  t = await startService({ RUN_WORKERS: '1', RUN_WORKERS_PER_WORKSPACE: '1', RUN_APPROVAL_TIMEOUT_SECONDS: '2', EVENTS_HEARTBEAT_SECONDS: '1' });
});
afterAll(() => t.close());

let n = 0;
async function agent(approval: 'write' | 'destructive' = 'destructive', overrides: Partial<AgentCreate> = {}) {
  const res = await t.client().PUT('/api/build/agents', {
    body: { ...minimalAgent(`Control ${++n}`), max_steps: 20, tools: { apps: ['kv', 'core'], connections: 'all', disabled_tools: [], approval }, ...overrides },
  });
  expect(res.response.status).toBe(201);
  return res.data!.data.document.slug;
}

async function start(slug: string, prompt: string, token?: string) {
  const res = await t.client(token).POST('/api/build/agents/{ref}/test', { params: { path: { ref: slug } }, body: { prompt } });
  expect([res.response.status, res.error]).toEqual([202, undefined]);
  return res.data!.data.run_id;
}

const cancel = (runId: string, token?: string) => t.client(token).POST('/api/build/runs/{runId}/cancel', { params: { path: { runId } } });
const decide = (runId: string, callId: string, decision: 'approve' | 'reject', note?: string, token?: string) =>
  t.client(token).POST('/api/build/runs/{runId}/approvals/{callId}', { params: { path: { runId, callId } }, body: { decision, ...(note && { note }) } });
const balance = () => t.service.store.workspaces.credits('ws-1', t.config.defaultCredits);
const sleeps = (count: number, ms: number) => Array.from({ length: count }, () => `/call core.sleep {"ms":${ms}}`).join('\n');

async function events(runId: string, after = 0): Promise<RunEvent[]> {
  const res = await t.client().GET('/api/build/runs/{runId}/events', {
    params: { path: { runId }, header: after ? { 'Last-Event-ID': String(after) } : {} },
    headers: { Accept: 'application/json' },
  });
  expect(res.response.status).toBe(200);
  return (res.data as unknown as { data: RunEvent[] }).data; // the JSON alternative of the stream
}

const waitForStatus = (runId: string, status: string, timeoutMs = 5000) => waitForAgentRunStatus(t, runId, status, timeoutMs);

describe('cancel', () => {
  test('a queued run never starts: cancelled at once, its reservation returned, who and when recorded', async () => {
    const slug = await agent();
    const before = await balance();
    const blocker = await start(slug, sleeps(3, 300));
    const queued = await start(slug, 'never');
    const res = await cancel(queued);
    expect(res.response.status).toBe(200);
    expect(res.data!.data).toMatchObject({ id: queued, status: 'cancelled', cancelled_by: 'user-1', run_started_at: null, credits: 0, steps: null });
    expect(res.data!.data.cancelled_at).toMatch(/Z$/);
    expect(res.data!.data.finished_at).toMatch(/Z$/);
    await waitForAgentRun(t, blocker);
    expect((await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId: queued } } })).data!.data).toMatchObject({
      status: 'cancelled',
      run_started_at: null,
    });
    const blocked = (await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId: blocker } } })).data!.data;
    expect(await balance()).toBe(before - (blocked.credits as number)); // the cancelled run cost nothing
    expect((await events(queued)).map((e) => e.type)).toEqual(['run.queued', 'run.finished']);
  });

  test('a running run stops before its next step; the call in flight finishes and is recorded; credits exact', async () => {
    const slug = await agent();
    const before = await balance();
    const runId = await start(slug, sleeps(10, 400));
    await waitForStatus(runId, 'running');
    await new Promise((r) => setTimeout(r, 600)); // inside the second sleep
    const res = await cancel(runId);
    expect(res.response.status).toBe(200);
    const run = res.data!.data;
    expect(run).toMatchObject({ status: 'cancelled', cancelled_by: 'user-1', final_text: null, error: null });
    expect(run.tool_calls.length).toBeGreaterThanOrEqual(1);
    expect(run.tool_calls.length).toBeLessThan(10);
    expect(run.tool_calls.every((c) => c.status === 'succeeded')).toBe(true); // the one in flight finished and was recorded
    expect(run.credits).toBe(run.steps);
    expect(await balance()).toBe(before - (run.credits as number));
    const types = (await events(runId)).map((e) => e.type);
    expect(types[types.length - 1]).toBe('run.finished');
    expect(types).toContain('run.cancel_requested');
  });

  test('cancelling twice answers the same 200; a finished run is 409; another user gets 404', async () => {
    const slug = await agent();
    const runId = await start(slug, sleeps(5, 300));
    const first = await cancel(runId);
    const second = await cancel(runId);
    expect(first.response.status).toBe(200);
    expect(second.response.status).toBe(200);
    expect(second.data!.data).toEqual(first.data!.data);

    const done = await start(slug, 'hello');
    await waitForAgentRun(t, done);
    const late = await cancel(done);
    expect(late.response.status).toBe(409);
    expect(late.error!.error).toContain('already ended (succeeded)');
    expect((await cancel(runId, t.token({ user: 'someone-else' }))).response.status).toBe(404);
  });

  test('a run whose call in flight outlasts the wait answers 202 and ends cancelled when the call ends', async () => {
    const quick = await startService({ RUN_CANCEL_WAIT_MS: '50' });
    try {
      const created = await quick.client().PUT('/api/build/agents', {
        body: { ...minimalAgent('Slow'), max_steps: 10, tools: { apps: ['core'], connections: 'all', disabled_tools: [], approval: 'destructive' } },
      });
      const slug = created.data!.data.document.slug;
      const runId = (await quick.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: slug } }, body: { prompt: sleeps(2, 800) } })).data!
        .data.run_id;
      await waitForAgentRunStatus(quick, runId, 'running');
      const res = await quick.client().POST('/api/build/runs/{runId}/cancel', { params: { path: { runId } } });
      expect(res.response.status).toBe(202);
      expect(res.data!.data).toMatchObject({ status: 'running', cancelled_by: 'user-1' });
      const run = await waitForAgentRun(quick, runId);
      expect(run).toMatchObject({ error: null, status: 'cancelled', cancelled_by: 'user-1', cancelled_at: res.data!.data.cancelled_at });
      expect(run.tool_calls).toHaveLength(1); // the first sleep finished; the second never started
      const again = await quick.client().POST('/api/build/runs/{runId}/cancel', { params: { path: { runId } } });
      expect(again.response.status).toBe(200);
    } finally {
      await quick.close();
    }
  });

  test('a workflow run stops starting steps: the ones not started are skipped, the run is cancelled', async () => {
    const slug = `wf-cancel-${++n}`;
    await t.client().PUT('/api/build/workflows', {
      body: {
        kind: 'service.workflow/v1',
        slug,
        name: slug,
        steps: [
          { id: 'a', kind: 'tool', tool: 'core.sleep', args: { ms: 2000 } }, // long enough to be seen running and cancelled on a loaded machine
          { id: 'b', kind: 'tool', tool: 'core.sleep', args: { ms: 10 }, after: ['a'] },
          { id: 'c', kind: 'tool', tool: 'core.echo', args: {}, after: ['b'] },
        ],
      },
    });
    const before = await balance();
    const started = await t.client().POST('/api/build/workflows/{ref}/test', { params: { path: { ref: slug } }, body: {} });
    const runId = started.data!.data.run_id;
    await waitForWorkflowRunStatus(t, runId, 'running');
    const res = await t.client().POST('/api/build/workflow-runs/{runId}/cancel', { params: { path: { runId } } });
    expect(res.response.status).toBe(200);
    const run = res.data!.data;
    expect(run.status).toBe('cancelled');
    expect(run.step_results.a!.status).toBe('succeeded');
    expect(run.step_results.b).toMatchObject({ status: 'skipped', error: 'skipped: the run was cancelled' });
    expect(run.step_results.c!.status).toBe('skipped');
    expect(await balance()).toBe(before - 1); // one step executed; the reservation of the other two went back
    await waitForWorkflowRun(t, runId);
  });
});

describe('approvals', () => {
  test('approve: the held call executes, the loop goes on; the run held no credits while it waited', async () => {
    const slug = await agent('write');
    const before = await balance();
    const runId = await start(slug, '/call kv.set {"key":"approved","value":42}\n/call kv.get {"key":"approved"}');
    const parked = await waitForStatus(runId, 'awaiting_approval');
    expect(parked.credits).toBe(1);
    expect(await balance()).toBe(before - 1); // the first step only: nothing reserved while parked
    const res = await decide(runId, 'call_1', 'approve', 'fine');
    expect(res.response.status).toBe(200);
    expect(res.data!.data.tool_calls[0]!.approval).toMatchObject({ decision: 'approve', note: 'fine', decided_by: 'user-1' });
    const run = await waitForAgentRun(t, runId);
    expect(run.status).toBe('succeeded');
    expect(run.tool_calls.map((c) => [c.id, c.status])).toEqual([
      ['call_1', 'succeeded'],
      ['call_2', 'succeeded'],
    ]);
    expect(run.tool_calls[1]!.output).toEqual({ key: 'approved', value: 42 });
    expect(await t.service.store.kv.get('ws-1', 'approved')).toBe(42);
    expect(run.credits).toBe(3);
    expect(await balance()).toBe(before - 3);
    const types = (await events(runId)).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['run.awaiting_approval', 'approval.decided', 'tool_call.started', 'tool_call.finished']));
    expect(types.filter((x) => x === 'run.started')).toHaveLength(2); // started, then resumed
  });

  test('reject: the call is not executed and the model is told; deciding twice is 409 naming the first decision', async () => {
    const slug = await agent('write');
    const runId = await start(slug, '/call kv.set {"key":"rejected","value":1}');
    await waitForStatus(runId, 'awaiting_approval');
    const res = await decide(runId, 'call_1', 'reject', 'not that key');
    expect(res.response.status).toBe(200);
    const again = await decide(runId, 'call_1', 'approve');
    expect(again.response.status).toBe(409);
    expect(again.error!.error).toContain('already decided: reject by user-1');
    const run = await waitForAgentRun(t, runId);
    expect(run.status).toBe('succeeded');
    expect(run.tool_calls[0]).toMatchObject({ status: 'rejected', error: 'rejected by user-1: not that key' });
    expect(run.final_text).toContain('rejected by a reviewer');
    expect(await t.service.store.kv.get('ws-1', 'rejected')).toBeUndefined();
    expect((await decide(runId, 'call_9', 'approve')).response.status).toBe(404);
  });

  test('two decisions at once: exactly one wins', async () => {
    const slug = await agent('write');
    const runId = await start(slug, '/call kv.set {"key":"race","value":1}');
    await waitForStatus(runId, 'awaiting_approval');
    const answers = await Promise.all([decide(runId, 'call_1', 'approve'), decide(runId, 'call_1', 'reject'), decide(runId, 'call_1', 'approve')]);
    expect(answers.map((a) => a.response.status).sort()).toEqual([200, 409, 409]);
    await waitForAgentRun(t, runId);
  });

  test('an undecided run expires as failed with a clear error; deciding then is 409', async () => {
    const slug = await agent('write');
    const runId = await start(slug, '/call kv.set {"key":"late","value":1}');
    const parked = await waitForStatus(runId, 'awaiting_approval');
    expect(Date.parse(parked.approval_expires_at!) - Date.parse(parked.finished_at ?? parked.run_started_at!)).toBeLessThanOrEqual(2500);
    const run = await waitForStatus(runId, 'failed', 6000);
    expect(run.error).toContain('approval expired');
    expect(run.approval_expires_at).toBeNull();
    const late = await decide(runId, 'call_1', 'approve');
    expect(late.response.status).toBe(409);
    expect(late.error!.error).toContain('not waiting for approval');
  });

  test('a parked run can be cancelled', async () => {
    const slug = await agent('write');
    const runId = await start(slug, '/call kv.set {"key":"parked","value":1}');
    await waitForStatus(runId, 'awaiting_approval');
    const res = await cancel(runId);
    expect(res.response.status).toBe(200);
    expect(res.data!.data.status).toBe('cancelled');
    expect((await decide(runId, 'call_1', 'approve')).response.status).toBe(409);
  });
});

describe('events', () => {
  test('a stream replays stored events, follows the run live, and a reconnect with Last-Event-ID resumes exactly after', async () => {
    const slug = await agent();
    const runId = await start(slug, sleeps(6, 150));
    const url = `${t.baseUrl}/api/build/runs/${runId}/events`;
    const first = await readEventStream(url, t.token(), { stopAfter: 3 });
    expect(first.events.map((e) => e.id)).toEqual([1, 2, 3]);
    const rest = await readEventStream(url, t.token(), { lastEventId: 3 });
    expect(rest.ended).toBe(true);
    const seen = [...first.events, ...rest.events];
    expect(seen.map((e) => e.id)).toEqual(seen.map((_, i) => i + 1));
    const stored = await events(runId);
    expect(seen.map((e) => [e.id, e.event, e.data])).toEqual(stored.map((e) => [e.seq, e.type, e]));
    expect(stored[stored.length - 1]).toMatchObject({ type: 'run.finished', data: { status: 'succeeded' } });
    expect(await events(runId, stored.length - 2)).toEqual(stored.slice(-2));
  });

  test('an idle stream gets keep-alive comments; headers say text/event-stream; other users get 404', async () => {
    const slug = await agent('write');
    const runId = await start(slug, '/call kv.set {"key":"idle","value":1}');
    await waitForStatus(runId, 'awaiting_approval');
    const url = `${t.baseUrl}/api/build/runs/${runId}/events`;
    const idle = await readEventStream(url, t.token(), { forMs: 1500 }); // approvals expire after 2 s here
    expect(idle.contentType).toBe('text/event-stream');
    expect(idle.comments).toBeGreaterThanOrEqual(1);
    expect(idle.ended).toBe(false);
    expect(idle.events[idle.events.length - 1]!.event).toBe('run.awaiting_approval');
    const other = await readEventStream(url, t.token({ user: 'u2' }));
    expect([other.status, other.contentType]).toEqual([404, 'application/json']);
    await cancel(runId);
  });
});
