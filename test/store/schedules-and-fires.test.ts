// Schedules: their rows follow the documents that declare them, the due ones are served fairly, a
// due time is claimed exactly once (by an advance, or by the run it starts), its outcome is kept as
// a fire row (at most FIRES_KEPT per schedule), a poll's outcomes move its counters, and the rows go
// with their owner — each case on both adapters.
import { randomUUID } from 'node:crypto';
import { adapters, useStore, FIRES_KEPT, type Agent, type ScheduledFire } from './adapters';
import { agent, createAgent, newRun, ok, poll, unique, workflow, workspace } from './fixtures';
import { CREATOR, WRITER } from './fixtures';

const ownSchedule = (cron: string, timezone = 'UTC') => ({ cron, timezone, enabled: true }) as Agent['schedule'];

describe.each(adapters)('$name: schedules and fires', (adapter) => {
  const { store } = useStore(adapter);

  /** Moves a schedule's next due time to `to` (from what it is now), recording nothing. */
  const moveTo = async (id: string, to: number | null) => {
    const row = (await store.schedules.find(id))!;
    expect(await store.schedules.advance({ id, expectedDue: row.next_due_at as number, next: to, fires: [] })).toBe(true);
  };

  describe('rows follow the documents', () => {
    test('an active agent’s own schedule and polls are rows with a next due time; a draft’s are inactive', async () => {
      const ws = workspace();
      const pollId = unique('poll');
      const before = Date.now();
      const doc = agent('timed', { status: 'active', triggers: [poll(pollId)], schedule: ownSchedule('0 9 * * *', 'Europe/Paris') });
      await createAgent(store, ws, doc);
      const rows = await store.schedules.ofOwner(doc.id);
      expect(rows.map((r) => [r.id, r.kind, r.workspace_id, r.owner_id, r.trigger_id, r.cron, r.timezone, r.active])).toEqual([
        [`agent:${doc.id}`, 'agent', ws, doc.id, null, '0 9 * * *', 'Europe/Paris', 1],
        [`poll:${pollId}`, 'poll', ws, doc.id, pollId, '*/5 * * * *', 'UTC', 1],
      ]);
      for (const row of rows) expect(row.next_due_at).toBeGreaterThan(before);
      expect(rows[1]).toMatchObject({
        detector: JSON.stringify({ tool: 'kv.get', args: { key: 'x' } }),
        last_output_hash: null,
        failures: 0,
        last_error: null,
        last_fired_at: null,
        last_run_id: null,
      });
      expect(await store.schedules.find(`poll:${pollId}`)).toEqual(rows[1]);
      const draft = agent('draft-timed', { triggers: [poll(unique('poll'))], schedule: ownSchedule('0 9 * * *') });
      await createAgent(store, ws, draft);
      expect((await store.schedules.ofOwner(draft.id)).map((r) => [r.active, r.next_due_at])).toEqual([
        [0, null],
        [0, null],
      ]);
      expect(await store.schedules.find(unique('none'))).toBeNull();
      expect(await store.schedules.ofOwner(randomUUID())).toEqual([]);
    });

    test('a replace keeps an unchanged schedule’s due time and counters; a new detector forgets the output seen; a new cron starts again; archived stops it; a dropped trigger’s row goes with its fires', async () => {
      const ws = workspace();
      const pollId = unique('poll');
      const id = `poll:${pollId}`;
      const doc = agent('polling', { status: 'active', triggers: [poll(pollId)] });
      let record = await createAgent(store, ws, doc);
      const replace = async (next: Agent) => {
        record = await ok(store.agents.replace(ws, doc.id, record.stampMicros, next, [], WRITER));
        return store.schedules.find(id);
      };
      // The scheduler moves the due time on, the detector fails once, then sees an output.
      await moveTo(id, 1000);
      expect(await store.schedules.advance({ id, expectedDue: 1000, next: 2000, fires: [{ dueAt: 1000, outcome: 'polling' }] })).toBe(true);
      await store.schedules.recordPoll(id, 1000, { kind: 'baseline', hash: 'seen' });
      expect(await store.schedules.advance({ id, expectedDue: 2000, next: 3000, fires: [{ dueAt: 2000, outcome: 'polling' }] })).toBe(true);
      await store.schedules.recordPoll(id, 2000, { kind: 'failed', error: 'boom', retryAt: 2500 });
      expect(await store.schedules.find(id)).toMatchObject({ next_due_at: 3000, last_output_hash: 'seen', failures: 1, last_error: 'boom' });
      expect(await replace({ ...record.document, name: 'renamed' })).toMatchObject({
        next_due_at: 3000,
        last_output_hash: 'seen',
        failures: 1,
        last_error: 'boom',
        active: 1,
      });
      // Other arguments: a new detector forgets the output and the failures (the due time depends on the cron alone).
      expect(await replace({ ...record.document, triggers: [poll(pollId, { key: 'y' })] })).toMatchObject({
        next_due_at: 3000,
        last_output_hash: null,
        failures: 0,
        last_error: null,
        detector: JSON.stringify({ tool: 'kv.get', args: { key: 'y' } }),
      });
      const recron = await replace({ ...record.document, triggers: [poll(pollId, { key: 'y' }, '*/7 * * * *')] });
      expect(recron).toMatchObject({ cron: '*/7 * * * *', active: 1 });
      expect(recron!.next_due_at).toBeGreaterThan(Date.now() - 1000);
      expect(await replace({ ...record.document, status: 'archived' })).toMatchObject({ active: 0, next_due_at: null });
      expect((await store.schedules.fires(id)).length).toBe(2);
      await replace({ ...record.document, triggers: [] });
      expect(await store.schedules.ofOwner(doc.id)).toEqual([]);
      expect(await store.schedules.fires(id)).toEqual([]);
    });

    test('a workflow’s schedule row follows it: disabled keeps the row without a due time; removed takes the row and its fires', async () => {
      const ws = workspace();
      const id = randomUUID();
      const record = await ok(
        store.workflows.create(ws, id, workflow('timed-wf', { schedule: { cron: '0 * * * *', timezone: 'UTC' } } as never), { limit: 10 }, CREATOR),
      );
      expect(await store.schedules.find(`workflow:${id}`)).toMatchObject({
        kind: 'workflow',
        owner_id: id,
        workspace_id: ws,
        trigger_id: null,
        active: 1,
        next_due_at: expect.any(Number),
      });
      await moveTo(`workflow:${id}`, 5000);
      expect(await store.schedules.advance({ id: `workflow:${id}`, expectedDue: 5000, next: 6000, fires: [{ dueAt: 5000, outcome: 'missed' }] })).toBe(true);
      const disabled = await ok(store.workflows.replace(ws, id, record.stampMicros, { ...record.document, enabled: false }, WRITER));
      expect(await store.schedules.find(`workflow:${id}`)).toMatchObject({ active: 0, next_due_at: null });
      await ok(store.workflows.replace(ws, id, disabled.stampMicros, { ...disabled.document, enabled: true }, WRITER));
      expect((await store.schedules.find(`workflow:${id}`))!.next_due_at).toBeGreaterThan(Date.now() - 1000);
      expect(await store.workflows.remove(ws, id)).toBe(true);
      expect(await store.schedules.find(`workflow:${id}`)).toBeNull();
      expect(await store.schedules.fires(`workflow:${id}`)).toEqual([]);
      // Without a schedule: no row.
      const plain = randomUUID();
      await ok(store.workflows.create(ws, plain, workflow('plain-wf'), { limit: 10 }, CREATOR));
      expect(await store.schedules.ofOwner(plain)).toEqual([]);
    });
  });

  describe('claims', () => {
    test('of concurrent advances of one due time, exactly one wins and records its fires; a stale due time writes nothing', async () => {
      const ws = workspace();
      const pollId = unique('poll');
      const doc = agent('advancing', { status: 'active', triggers: [poll(pollId)] });
      await createAgent(store, ws, doc);
      const id = `poll:${pollId}`;
      await moveTo(id, 1000);
      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.schedules.advance({ id, expectedDue: 1000, next: 2000 + i, fires: [{ dueAt: 1000, outcome: 'polling' }] })),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await store.schedules.find(id)).toMatchObject({ next_due_at: 2000 + claims.indexOf(true) });
      expect(await store.schedules.fires(id)).toEqual([{ due_at: 1000, outcome: 'polling', run_id: null, detail: null }]);
      expect(await store.schedules.advance({ id, expectedDue: 1000, next: 9999, fires: [{ dueAt: 1000, outcome: 'missed' }] })).toBe(false);
      expect(await store.schedules.advance({ id: unique('missing'), expectedDue: 1000, next: 2000, fires: [] })).toBe(false);
      expect((await store.schedules.fires(id)).length).toBe(1);
      // Several decisions of one claim, with their runs and details; a claim may stop the schedule (next: null).
      const next = (await store.schedules.find(id))!.next_due_at as number;
      expect(
        await store.schedules.advance({
          id,
          expectedDue: next,
          next: null,
          fires: [
            { dueAt: next, outcome: 'overlap', runId: 'run-x', detail: 'still running' },
            { dueAt: next + 1, outcome: 'missed' },
          ],
        }),
      ).toBe(true);
      expect(await store.schedules.fires(id)).toEqual([
        { due_at: 1000, outcome: 'polling', run_id: null, detail: null },
        { due_at: next, outcome: 'overlap', run_id: 'run-x', detail: 'still running' },
        { due_at: next + 1, outcome: 'missed', run_id: null, detail: null },
      ]);
      expect(await store.schedules.find(id)).toMatchObject({ next_due_at: null });
    });

    test('fires are kept per schedule up to FIRES_KEPT, the oldest trimmed', async () => {
      const ws = workspace();
      const pollId = unique('poll');
      await createAgent(store, ws, agent('trimmed', { status: 'active', triggers: [poll(pollId)] }));
      const id = `poll:${pollId}`;
      await moveTo(id, 1);
      const total = FIRES_KEPT + 5;
      for (let due = 1; due <= total; due++) {
        expect(await store.schedules.advance({ id, expectedDue: due, next: due + 1, fires: [{ dueAt: due, outcome: 'missed' }] })).toBe(true);
      }
      const fires = await store.schedules.fires(id);
      expect(fires).toHaveLength(FIRES_KEPT);
      expect(fires[0]!.due_at).toBe(total - FIRES_KEPT + 1);
      expect(fires[FIRES_KEPT - 1]!.due_at).toBe(total);
    });

    test('recordPoll: failed (retry no earlier than retryAt), baseline and unchanged set the counters; only a fire still `polling` takes the outcome, the counters move either way', async () => {
      const ws = workspace();
      const pollId = unique('poll');
      await createAgent(store, ws, agent('recording', { status: 'active', triggers: [poll(pollId)] }));
      const id = `poll:${pollId}`;
      await moveTo(id, 1000);
      expect(await store.schedules.advance({ id, expectedDue: 1000, next: 2000, fires: [{ dueAt: 1000, outcome: 'polling' }] })).toBe(true);
      await store.schedules.recordPoll(id, 1000, { kind: 'failed', error: 'boom', retryAt: 5000 });
      expect(await store.schedules.find(id)).toMatchObject({ next_due_at: 5000, failures: 1, last_error: 'boom' });
      expect(await store.schedules.fires(id)).toEqual([{ due_at: 1000, outcome: 'failed', run_id: null, detail: 'boom' }]);
      // The fire row is no longer `polling`: it keeps its outcome; the counters still move (a retry before the due time leaves it).
      await store.schedules.recordPoll(id, 1000, { kind: 'failed', error: 'again', retryAt: 10 });
      expect(await store.schedules.find(id)).toMatchObject({ next_due_at: 5000, failures: 2, last_error: 'again' });
      expect(await store.schedules.fires(id)).toEqual([{ due_at: 1000, outcome: 'failed', run_id: null, detail: 'boom' }]);
      expect(await store.schedules.advance({ id, expectedDue: 5000, next: 6000, fires: [{ dueAt: 5000, outcome: 'polling' }] })).toBe(true);
      await store.schedules.recordPoll(id, 5000, { kind: 'baseline', hash: 'h1' });
      expect(await store.schedules.find(id)).toMatchObject({ next_due_at: 6000, failures: 0, last_error: null, last_output_hash: 'h1' });
      expect(await store.schedules.advance({ id, expectedDue: 6000, next: 7000, fires: [{ dueAt: 6000, outcome: 'polling' }] })).toBe(true);
      await store.schedules.recordPoll(id, 6000, { kind: 'unchanged', hash: 'h1' });
      expect((await store.schedules.fires(id)).map((f) => [f.due_at, f.outcome])).toEqual([
        [1000, 'failed'],
        [5000, 'baseline'],
        [6000, 'unchanged'],
      ]);
      // A retry later than the due time moves it.
      await store.schedules.recordPoll(id, 7000, { kind: 'failed', error: 'late', retryAt: 8000 });
      expect(await store.schedules.find(id)).toMatchObject({ next_due_at: 8000, failures: 1, last_output_hash: 'h1' });
    });

    test('the agent’s trigger status version: 0 at first; raised by a poll’s advance and outcome and by a run its trigger starts, not by its own schedule', async () => {
      const ws = workspace();
      const pollId = unique('poll');
      const doc = agent('versioned', { status: 'active', triggers: [poll(pollId)], schedule: ownSchedule('0 9 * * *') });
      await createAgent(store, ws, doc);
      expect(await store.schedules.statusVersion(randomUUID())).toBe(0);
      const v0 = await store.schedules.statusVersion(doc.id);
      await moveTo(`agent:${doc.id}`, 100);
      expect(await store.schedules.statusVersion(doc.id)).toBe(v0);
      await moveTo(`poll:${pollId}`, 100);
      const v1 = await store.schedules.statusVersion(doc.id);
      expect(v1).toBeGreaterThan(v0);
      await store.schedules.recordPoll(`poll:${pollId}`, 100, { kind: 'baseline', hash: 'h' });
      const v2 = await store.schedules.statusVersion(doc.id);
      expect(v2).toBeGreaterThan(v1);
      const outcome = await store.runs.accept(
        newRun(unique('run'), { workspaceId: ws, kind: 'agent', targetId: doc.id, source: 'webhook', triggerId: unique('t') }),
        () => 'refused',
      );
      expect(outcome).toEqual({ status: 'queued', claimed: false });
      expect(await store.schedules.statusVersion(doc.id)).toBeGreaterThan(v2);
    });
  });

  describe('runs that schedules start', () => {
    test('a due time fired with its run: the run is queued, the fire recorded `fired` with it, the schedule notes it; the same due time again is `raced` and writes nothing', async () => {
      const ws = workspace();
      const doc = agent('fired', { status: 'active', schedule: ownSchedule('* * * * *') });
      await createAgent(store, ws, doc);
      const id = `agent:${doc.id}`;
      await moveTo(id, 60_000);
      const fire: ScheduledFire = { kind: 'schedule', claim: { id, expectedDue: 60_000, next: 120_000, fires: [] }, dueAt: 60_000 };
      const runId = unique('run');
      expect(await store.runs.accept(newRun(runId, { workspaceId: ws, kind: 'agent', targetId: doc.id, source: 'schedule', fire }), () => 'refused')).toEqual({
        status: 'queued',
        claimed: false,
      });
      expect(await store.schedules.fires(id)).toEqual([{ due_at: 60_000, outcome: 'fired', run_id: runId, detail: null }]);
      expect(await store.schedules.find(id)).toMatchObject({ next_due_at: 120_000, last_run_id: runId, last_fired_at: expect.any(String) });
      const again = unique('run');
      expect(await store.runs.accept(newRun(again, { workspaceId: ws, kind: 'agent', targetId: doc.id, source: 'schedule', fire }), () => 'refused')).toEqual({
        status: 'raced',
      });
      expect(await store.runs.find(again)).toBeNull();
      expect(await store.schedules.fires(id)).toHaveLength(1);
    });

    test('a due time whose run is refused (no credits) is recorded `refused` with the refusal', async () => {
      const ws = workspace();
      const doc = agent('refused-fire', { status: 'active', schedule: ownSchedule('* * * * *') });
      await createAgent(store, ws, doc);
      const id = `agent:${doc.id}`;
      await moveTo(id, 60_000);
      const fire: ScheduledFire = { kind: 'schedule', claim: { id, expectedDue: 60_000, next: 120_000, fires: [] }, dueAt: 60_000 };
      const runId = unique('run');
      const outcome = await store.runs.accept(
        newRun(runId, { workspaceId: ws, kind: 'agent', targetId: doc.id, source: 'schedule', fire, minimumCost: 5, initialCredits: 1 }),
        (b) => `only ${b}`,
      );
      expect(outcome).toEqual({ status: 'refused', balance: 1 });
      expect(await store.schedules.fires(id)).toEqual([{ due_at: 60_000, outcome: 'refused', run_id: runId, detail: 'only 1' }]);
      expect(await store.runs.find(runId)).toMatchObject({ status: 'refused', error: 'only 1' });
    });

    test('a poll’s changed output starts one run: its `polling` fire becomes `fired`, the output is the one seen next; a second run for the same output is `raced`', async () => {
      const ws = workspace();
      const pollId = unique('poll');
      const doc = agent('poll-fired', { status: 'active', triggers: [poll(pollId)] });
      await createAgent(store, ws, doc);
      const id = `poll:${pollId}`;
      await moveTo(id, 1000);
      expect(await store.schedules.advance({ id, expectedDue: 1000, next: 2000, fires: [{ dueAt: 1000, outcome: 'polling' }] })).toBe(true);
      const fire: ScheduledFire = { kind: 'poll', scheduleId: id, dueAt: 1000, seenHash: null, newHash: 'out-1' };
      const runId = unique('run');
      expect(
        await store.runs.accept(newRun(runId, { workspaceId: ws, kind: 'agent', targetId: doc.id, source: 'poll', triggerId: pollId, fire }), () => 'refused'),
      ).toEqual({ status: 'queued', claimed: false });
      expect(await store.schedules.fires(id)).toEqual([{ due_at: 1000, outcome: 'fired', run_id: runId, detail: null }]);
      expect(await store.schedules.find(id)).toMatchObject({ last_output_hash: 'out-1', last_run_id: runId, failures: 0 });
      expect(
        await store.runs.accept(
          newRun(unique('run'), { workspaceId: ws, kind: 'agent', targetId: doc.id, source: 'poll', triggerId: pollId, fire }),
          () => 'refused',
        ),
      ).toEqual({ status: 'raced' });
      expect((await store.runs.lastStartedBy([pollId])).get(pollId)).toEqual((await store.runs.find(runId))!.accepted_at);
    });

    test('of concurrent runs of one due time, one is queued and the others are `raced`', async () => {
      const ws = workspace();
      const doc = agent('concurrent-fire', { status: 'active', schedule: ownSchedule('* * * * *') });
      await createAgent(store, ws, doc);
      const id = `agent:${doc.id}`;
      await moveTo(id, 60_000);
      const fire: ScheduledFire = { kind: 'schedule', claim: { id, expectedDue: 60_000, next: 120_000, fires: [] }, dueAt: 60_000 };
      const ids = Array.from({ length: 6 }, () => unique('run'));
      const outcomes = await Promise.all(
        ids.map((runId) => store.runs.accept(newRun(runId, { workspaceId: ws, kind: 'agent', targetId: doc.id, source: 'schedule', fire }), () => 'refused')),
      );
      expect(outcomes.map((o) => o.status).sort()).toEqual(['queued', 'raced', 'raced', 'raced', 'raced', 'raced']);
      const winner = ids[outcomes.findIndex((o) => o.status === 'queued')]!;
      expect(await store.schedules.fires(id)).toEqual([{ due_at: 60_000, outcome: 'fired', run_id: winner, detail: null }]);
      expect(await store.workspaces.credits(ws, 0)).toBe(999);
    });
  });
});

describe.each(adapters)('$name: due schedules', (adapter) => {
  const { store } = useStore(adapter);

  test('due() serves the due active schedules fairly: each workspace’s soonest first, at most perWorkspace each, at most limit in all', async () => {
    const [busy, quiet] = [workspace(), workspace()];
    const due = async (id: string, at: number) => {
      const row = (await store.schedules.find(id))!;
      expect(await store.schedules.advance({ id, expectedDue: row.next_due_at as number, next: at, fires: [] })).toBe(true);
    };
    const busyPolls = [unique('busy-a'), unique('busy-b'), unique('busy-c')];
    await createAgent(store, busy, agent('busy', { status: 'active', triggers: busyPolls.map((p) => poll(p)) }));
    const quietPoll = unique('quiet');
    await createAgent(store, quiet, agent('quiet', { status: 'active', triggers: [poll(quietPoll)] }));
    const inactive = unique('off');
    await createAgent(store, quiet, agent('off', { triggers: [poll(inactive)] })); // a draft: no due time
    await due(`poll:${busyPolls[0]}`, 1000);
    await due(`poll:${busyPolls[1]}`, 1001);
    await due(`poll:${busyPolls[2]}`, 1002);
    await due(`poll:${quietPoll}`, 1500);
    const ids = async (nowMs: number, limit: number, perWorkspace: number) => (await store.schedules.due(nowMs, limit, perWorkspace)).map((r) => r.id);
    expect(await ids(999, 100, 100)).toEqual([]);
    expect(await ids(1001, 100, 100)).toEqual([`poll:${busyPolls[0]}`, `poll:${busyPolls[1]}`]);
    // Rank by rank: every workspace's soonest, then every workspace's second…
    expect(await ids(2000, 100, 100)).toEqual([`poll:${busyPolls[0]}`, `poll:${quietPoll}`, `poll:${busyPolls[1]}`, `poll:${busyPolls[2]}`]);
    expect(await ids(2000, 100, 1)).toEqual([`poll:${busyPolls[0]}`, `poll:${quietPoll}`]);
    expect(await ids(2000, 3, 100)).toEqual([`poll:${busyPolls[0]}`, `poll:${quietPoll}`, `poll:${busyPolls[1]}`]);
    const [row] = await store.schedules.due(1000, 1, 1);
    expect(row).toMatchObject({ id: `poll:${busyPolls[0]}`, kind: 'poll', workspace_id: busy, next_due_at: 1000, active: 1 });
  });
});
