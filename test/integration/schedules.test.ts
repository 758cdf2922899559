// Schedules and poll triggers with an injected clock: the service's own timer is off
// (SCHEDULER_TICK_MS=0) and each test calls the scheduler's tick with the time it wants. Due times
// come from the stored schedule rows, which the document writes keep.
import { startService, type TestService } from '../helpers/service';
import { storedRows } from '../helpers/stored';
import { minimalAgent } from '../helpers/fixtures';
import { DETECTORS_PER_WORKSPACE, startScheduler } from '../../src/services/scheduler';
import { FIRES_KEPT } from '../../src/store/port';
import { createLogger } from '../../src/log';
import type { components } from '../../generated/api';

type WorkflowCreate = components['schemas']['WorkflowCreate'];
const MINUTE = 60_000;

let t: TestService;
beforeAll(async () => {
  t = await startService({ SCHEDULER_TICK_MS: '0', SCHEDULE_CATCH_UP_SECONDS: '600' });
});
afterAll(() => t.close());

let n = 0;
async function scheduledWorkflow(cron: string, extra: Partial<WorkflowCreate> = {}) {
  const slug = `scheduled-${++n}`;
  const res = await t.client().PUT('/api/build/workflows', {
    body: {
      kind: 'service.workflow/v1',
      slug,
      name: slug,
      schedule: { cron, timezone: 'UTC' },
      steps: [{ id: 'a', kind: 'tool', tool: 'core.echo', args: { at: 'now' } }],
      ...extra,
    },
  });
  expect(res.response.status).toBe(201);
  const doc = res.data!.data.document;
  const id = (await t.service.store.workflows.find('ws-1', slug))!.id;
  return { slug, id, doc, etag: res.response.headers.get('etag')!, scheduleId: `workflow:${id}` };
}

const schedule = async (id: string) => (await t.service.store.schedules.find(id))!;
const fires = (id: string) => t.service.store.schedules.fires(id);

const runsOf = (targetId: string, source = 'schedule') =>
  storedRows<{ id: string; status: string }>(t.config, 'SELECT id, status, source, started_by FROM runs WHERE target_id = ? AND source = ? ORDER BY id', [
    targetId,
    source,
  ]);

async function tick(now: number) {
  await t.service.scheduler.tick(now);
  await t.service.scheduler.idle(); // the detectors it started, and the runs they start
  await t.service.runner.idle();
}

describe('workflow schedules', () => {
  test('a due time fires once, on time, and the run is readable in the workspace', async () => {
    const wf = await scheduledWorkflow('*/5 * * * *');
    const due = (await schedule(wf.scheduleId)).next_due_at!;
    expect(due % (5 * MINUTE)).toBe(0);
    expect(due).toBeGreaterThan(Date.now());

    await tick(due - 1);
    expect(await runsOf(wf.id)).toEqual([]);
    await tick(due);
    await tick(due);
    await tick(due + 1000);
    const runs = await runsOf(wf.id);
    expect(runs).toHaveLength(1);
    expect(await fires(wf.scheduleId)).toEqual([{ due_at: due, outcome: 'fired', run_id: runs[0]!.id, detail: null }]);
    expect((await schedule(wf.scheduleId)).next_due_at).toBe(due + 5 * MINUTE);

    const read = await t.client(t.token({ user: 'colleague' })).GET('/api/build/workflow-runs/{runId}', { params: { path: { runId: runs[0]!.id } } });
    expect(read.data!.data).toMatchObject({ status: 'succeeded', source: 'schedule', trigger_id: null, started_by: `schedule:${wf.scheduleId}` });
  });

  test('after an outage: one catch-up run for the latest due time within the window, every other one recorded as missed', async () => {
    const wf = await scheduledWorkflow('*/5 * * * *');
    const due = (await schedule(wf.scheduleId)).next_due_at!;
    await tick(due + 3 * 60 * MINUTE + 2 * MINUTE); // 37 due times passed; the latest 2 minutes ago
    const runs = await runsOf(wf.id);
    expect(runs).toHaveLength(1);
    const recorded = await fires(wf.scheduleId);
    expect(recorded).toHaveLength(37);
    expect(recorded.filter((f) => f.outcome === 'missed')).toHaveLength(36);
    expect(recorded.at(-1)).toEqual({ due_at: due + 3 * 60 * MINUTE, outcome: 'fired', run_id: runs[0]!.id, detail: null });
    expect((await schedule(wf.scheduleId)).next_due_at).toBe(due + 3 * 60 * MINUTE + 5 * MINUTE);
  });

  test('a latest due time older than the catch-up window fires nothing; all are recorded as missed', async () => {
    const wf = await scheduledWorkflow('0 * * * *');
    const due = (await schedule(wf.scheduleId)).next_due_at!;
    await tick(due + 2 * 60 * MINUTE + 30 * MINUTE); // latest 30 minutes ago; the window is 10
    expect(await runsOf(wf.id)).toEqual([]);
    expect((await fires(wf.scheduleId)).map((f) => f.outcome)).toEqual(['missed', 'missed', 'missed']);
  });

  test('overlap: a due time whose previous run is still going is skipped and recorded', async () => {
    const wf = await scheduledWorkflow('*/5 * * * *', { steps: [{ id: 'slow', kind: 'tool', tool: 'core.sleep', args: { ms: 1500 } }] });
    const due = (await schedule(wf.scheduleId)).next_due_at!;
    await t.service.scheduler.tick(due);
    await t.service.scheduler.tick(due + 5 * MINUTE); // the first run sleeps still
    await t.service.runner.idle();
    const recorded = await fires(wf.scheduleId);
    expect(recorded.map((f) => f.outcome)).toEqual(['fired', 'overlap']);
    expect(recorded[1]!.detail).toMatch(/^run [0-9a-f-]{36} is still (queued|running)$/);
    expect(await runsOf(wf.id)).toHaveLength(1);
  });

  test('two schedulers deciding the same due time at once start one run', async () => {
    const wf = await scheduledWorkflow('*/5 * * * *');
    const due = (await schedule(wf.scheduleId)).next_due_at!;
    const other = startScheduler(ctxOf(t), {
      catchUpMs: 600_000,
      tickMs: 0,
      http: { allowPrivate: false, timeoutMs: 1000, maxBytes: 1024 },
      limits: t.config.runLimits,
      logger: createLogger('silent'),
    });
    await Promise.all([t.service.scheduler.tick(due), other.tick(due), other.tick(due)]);
    await t.service.runner.idle();
    expect(await runsOf(wf.id)).toHaveLength(1);
    expect(await fires(wf.scheduleId)).toHaveLength(1);
  });

  test('a replace that changes the schedule takes effect for the next due time; disabling stops it; a deleted workflow leaves no schedule', async () => {
    const wf = await scheduledWorkflow('*/5 * * * *');
    const before = (await schedule(wf.scheduleId)).next_due_at!;
    const replace = (etag: string, doc: typeof wf.doc, changes: Partial<typeof wf.doc>) =>
      t.client().PUT('/api/build/workflows/{ref}', { params: { path: { ref: wf.slug }, header: { 'If-Match': etag } }, body: { ...doc, ...changes } });
    const hourly = await replace(wf.etag, wf.doc, { schedule: { cron: '0 * * * *', timezone: 'UTC' } });
    expect(hourly.response.status).toBe(200);
    const after = (await schedule(wf.scheduleId)).next_due_at!;
    expect(after % (60 * MINUTE)).toBe(0);
    expect(after).toBeGreaterThanOrEqual(before);
    const renamed = await replace(hourly.response.headers.get('etag')!, hourly.data!.data.document, { name: 'Renamed' });
    expect((await schedule(wf.scheduleId)).next_due_at).toBe(after); // untouched schedule, untouched due time
    const disabled = await replace(renamed.response.headers.get('etag')!, renamed.data!.data.document, { enabled: false });
    expect(disabled.response.status).toBe(200);
    expect(await schedule(wf.scheduleId)).toMatchObject({ active: 0, next_due_at: null });
    await tick(after + 10 * 60 * MINUTE);
    expect(await runsOf(wf.id)).toEqual([]);
    await t.client().DELETE('/api/build/workflows/{ref}', { params: { path: { ref: wf.slug } } });
    expect(await t.service.store.schedules.find(wf.scheduleId)).toBeNull();
  });

  test('a workflow whose inputs have no defaults cannot run on a schedule: the due time is recorded as failed', async () => {
    const wf = await scheduledWorkflow('*/5 * * * *', {
      inputs: { needed: {} },
      steps: [{ id: 'a', kind: 'tool', tool: 'core.echo', args: { v: '{{inputs.needed}}' } }],
    });
    const due = (await schedule(wf.scheduleId)).next_due_at!;
    await tick(due);
    expect(await runsOf(wf.id)).toEqual([]);
    expect(await fires(wf.scheduleId)).toEqual([
      {
        due_at: due,
        outcome: 'failed',
        run_id: null,
        detail: "a scheduled run uses the inputs' defaults: body.input.needed: required: the input has no default",
      },
    ]);
  });
});

describe('agent schedules', () => {
  async function scheduledAgent(
    status: 'draft' | 'active',
    schedule: Record<string, unknown> = { enabled: true, cron: '*/10 * * * *', timezone: 'Europe/Berlin', prompt: 'Morning report.' },
  ) {
    const created = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent(`Scheduled ${++n}`), schedule } });
    let doc = created.data!.data.document;
    let etag = created.response.headers.get('etag')!;
    if (status === 'active') {
      const res = await t
        .client()
        .POST('/api/build/agents/{ref}/status', { params: { path: { ref: doc.id }, header: { 'If-Match': etag } }, body: { status: 'active' } });
      doc = res.data!.data.document;
      etag = res.response.headers.get('etag')!;
    }
    return { doc, etag, scheduleId: `agent:${doc.id}` };
  }

  test("an active agent's enabled schedule fires with its prompt; a draft's does not; archiving stops it", async () => {
    const draft = await scheduledAgent('draft');
    expect(await schedule(draft.scheduleId)).toMatchObject({ active: 0, next_due_at: null, timezone: 'Europe/Berlin' });

    const agent = await scheduledAgent('active');
    const due = (await schedule(agent.scheduleId)).next_due_at!;
    await tick(due);
    const runs = await runsOf(agent.doc.id);
    expect(runs).toHaveLength(1);
    const run = await t.client().GET('/api/build/runs/{runId}', { params: { path: { runId: runs[0]!.id } } });
    expect(run.data!.data).toMatchObject({
      status: 'succeeded',
      source: 'schedule',
      transcript: [{ role: 'user', content: 'Morning report.' }, expect.anything()],
    });

    const archived = await t
      .client()
      .POST('/api/build/agents/{ref}/status', { params: { path: { ref: agent.doc.id }, header: { 'If-Match': agent.etag } }, body: { status: 'archived' } });
    expect(archived.response.status).toBe(200);
    expect(await schedule(agent.scheduleId)).toMatchObject({ active: 0, next_due_at: null });
    await tick(due + 60 * MINUTE);
    expect(await runsOf(agent.doc.id)).toHaveLength(1);
  });
});

describe('poll triggers', () => {
  async function pollingAgent(tool: string, args: Record<string, unknown>) {
    const created = await t.client().PUT('/api/build/agents', {
      body: {
        ...minimalAgent(`Poller ${++n}`),
        triggers: [{ kind: 'poll', name: 'Watch', tool, args, cron: '* * * * *', timezone: 'UTC', prompt: 'Something changed.' }],
      },
    });
    const doc = created.data!.data.document;
    const active = await t.client().POST('/api/build/agents/{ref}/status', {
      params: { path: { ref: doc.id }, header: { 'If-Match': created.response.headers.get('etag')! } },
      body: { status: 'active' },
    });
    const trigger = active.data!.data.document.triggers[0]!;
    return { doc: active.data!.data.document, scheduleId: `poll:${trigger.id}`, triggerId: trigger.id };
  }

  test('the detector runs on its cron; a run starts only when its output changes, with the new output', async () => {
    const key = `watched-${n}`;
    const poller = await pollingAgent('kv.get', { key });
    let due = (await schedule(poller.scheduleId)).next_due_at!;
    await tick(due); // the first output is the baseline
    await tick((due += MINUTE)); // unchanged
    await t.service.store.kv.set('ws-1', key, { version: 1 });
    await tick((due += MINUTE)); // changed: a run
    await tick((due += MINUTE)); // unchanged again
    expect((await fires(poller.scheduleId)).map((f) => f.outcome)).toEqual(['baseline', 'unchanged', 'fired', 'unchanged']);
    const runs = await runsOf(poller.doc.id, 'poll');
    expect(runs).toHaveLength(1);
    const run = await t.client(t.token({ user: 'colleague' })).GET('/api/build/runs/{runId}', { params: { path: { runId: runs[0]!.id } } });
    expect(run.data!.data).toMatchObject({ source: 'poll', trigger_id: poller.triggerId, status: 'succeeded' });
    expect(run.data!.data.transcript[0]!.content).toBe(`Something changed.\n\nDetector output:\n${JSON.stringify({ key, value: { version: 1 } })}`);
  });

  test('a failing detector starts nothing, records the error, and backs off', async () => {
    const poller = await pollingAgent('core.fail', { message: 'upstream down' });
    const due = (await schedule(poller.scheduleId)).next_due_at!;
    await tick(due);
    expect(await fires(poller.scheduleId)).toEqual([{ due_at: due, outcome: 'failed', run_id: null, detail: 'the detector core.fail failed: upstream down' }]);
    const row = await schedule(poller.scheduleId);
    expect(row).toMatchObject({ failures: 1, last_error: 'the detector core.fail failed: upstream down' });
    expect(row.next_due_at).toBeGreaterThanOrEqual(due + MINUTE);
    await tick(row.next_due_at!);
    const again = await schedule(poller.scheduleId);
    expect(again.failures).toBe(2);
    expect(again.next_due_at! - row.next_due_at!).toBeGreaterThanOrEqual(2 * MINUTE); // 1, 2, 4 … minutes
    expect(await runsOf(poller.doc.id, 'poll')).toEqual([]);
    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: poller.doc.id } } });
    expect(read.data!.data.triggers[0]).toMatchObject({
      last_fired_at: null,
      next_fire_at: new Date(again.next_due_at!).toISOString(),
      last_error: 'the detector core.fail failed: upstream down',
    });
  });
});

/** The service's context, as the scheduler it started got it (a second scheduler on the same store and runner). */
function ctxOf(s: TestService) {
  return s.service.ctx;
}

describe('fire records are bounded', () => {
  test('a schedule keeps its newest FIRES_KEPT records, however many due times it decided; they go with it', async () => {
    const wf = await scheduledWorkflow('* * * * *');
    const first = (await schedule(wf.scheduleId)).next_due_at!;
    // Five hours late at once: 300 due times decided (the latest fires, the rest missed), then a few more.
    await tick(first + 300 * MINUTE);
    for (let i = 1; i <= 3; i++) await tick(first + (300 + i) * MINUTE);
    const kept = await fires(wf.scheduleId);
    expect(kept.length).toBeLessThanOrEqual(FIRES_KEPT + 1);
    expect(kept.length).toBeGreaterThanOrEqual(FIRES_KEPT);
    expect(kept[kept.length - 1]!.due_at).toBe(first + 303 * MINUTE); // the newest are the ones kept
    expect(kept.map((f) => f.outcome).filter((o) => o === 'fired').length).toBe(4);

    // A replace that drops the schedule drops its records; so does deleting the workflow.
    const replaced = await t.client().PUT('/api/build/workflows/{ref}', {
      params: {
        path: { ref: wf.slug },
        header: { 'If-Match': (await t.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: wf.slug } } })).response.headers.get('etag')! },
      },
      body: { ...(await t.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: wf.slug } } })).data!.data, schedule: null },
    });
    expect(replaced.response.status).toBe(200);
    expect(await fires(wf.scheduleId)).toEqual([]);

    const other = await scheduledWorkflow('* * * * *');
    const due = (await schedule(other.scheduleId)).next_due_at!;
    await tick(due + 5 * MINUTE);
    expect((await fires(other.scheduleId)).length).toBeGreaterThan(0);
    const deleted = await t.client().DELETE('/api/build/workflows/{ref}', { params: { path: { ref: other.slug } } });
    expect(deleted.response.status).toBe(200);
    expect(await fires(other.scheduleId)).toEqual([]);
  });
});

describe('fair across workspaces', () => {
  test("one workspace's slow detectors do not delay another workspace's schedule; they run a few at a time, and one past its budget is recorded as failed", async () => {
    // Every schedule below is due at the next minute of when it was written: write them all within one minute.
    const intoMinute = Date.now() % MINUTE;
    if (intoMinute > MINUTE - 15_000) await new Promise((resolve) => setTimeout(resolve, MINUTE - intoMinute + 100));
    // Workspace `noisy`: 30 poll triggers whose detector sleeps 3 s, all due each minute.
    const noisy = t.token({ workspace: 'noisy' });
    const triggers = Array.from({ length: 20 }, (_, i) => ({
      kind: 'poll' as const,
      name: `Slow ${i}`,
      tool: 'core.sleep',
      args: { ms: 3000 },
      cron: '* * * * *',
      timezone: 'UTC',
    }));
    const ids: string[] = [];
    for (const batch of [0, 1]) {
      const created = await t.client(noisy).PUT('/api/build/agents', {
        body: {
          ...minimalAgent(`Noisy ${batch}`),
          tools: { apps: ['core'], connections: 'all', disabled_tools: [], approval: 'destructive' },
          triggers: batch ? triggers.slice(0, 10) : triggers,
        },
      });
      expect(created.response.status).toBe(201);
      const active = await t.client(noisy).POST('/api/build/agents/{ref}/status', {
        params: { path: { ref: created.data!.data.document.id }, header: { 'If-Match': created.response.headers.get('etag')! } },
        body: { status: 'active' },
      });
      ids.push(...active.data!.data.document.triggers.map((tr) => `poll:${tr.id}`));
    }
    // Another workspace's every-minute schedule, due at the same minute.
    const quiet = await scheduledWorkflow('* * * * *');
    const due = (await schedule(quiet.scheduleId)).next_due_at!;
    for (const id of ids) expect((await schedule(id)).next_due_at).toBe(due);

    const scheduler = startScheduler(ctxOf(t), {
      catchUpMs: 600_000,
      tickMs: 0,
      http: { allowPrivate: false, timeoutMs: 1000, maxBytes: 1024 },
      limits: t.config.runLimits,
      detectorTimeoutMs: 1000,
      logger: createLogger('silent'),
    });
    const started = performance.now();
    await scheduler.tick(due);
    const tickMs = performance.now() - started;
    expect(tickMs).toBeLessThan(1000); // the detectors (3 s each) are not waited for
    expect((await fires(quiet.scheduleId)).map((f) => f.outcome)).toEqual(['fired']);

    // Four of the noisy workspace's polls were claimed and run; the rest stay due for later ticks.
    const claimed = async () => (await Promise.all(ids.map((id) => fires(id)))).filter((f) => f.length).length;
    expect(await claimed()).toBe(DETECTORS_PER_WORKSPACE);
    await scheduler.tick(due + 500); // all four still running: none more
    expect(await claimed()).toBe(DETECTORS_PER_WORKSPACE);
    await scheduler.idle();
    // Each overran its 1 s budget: recorded as failed, and backing off.
    const outcomes = (await Promise.all(ids.map((id) => fires(id)))).flat();
    expect(outcomes.map((f) => [f.outcome, f.detail])).toEqual(
      Array(DETECTORS_PER_WORKSPACE).fill(['failed', 'the detector core.sleep failed: core.sleep took longer than 1 s (POLL_DETECTOR_TIMEOUT_SECONDS)']),
    );
    await scheduler.stop();
    await t.service.runner.idle();
  }, 40_000); // with up to 15 s of waiting for a minute's start
});
