// Runs from acceptance to their end: credits reserved on acceptance (never below zero) and settled
// at the end, the queue's claims under a per-workspace cap, leases (renewed, expired, released),
// progress and more credits while running, and the end — each case on both adapters.
import { adapters, useStore, FINAL_EVENT } from './adapters';
import { balance, emptyQueue, eventTypes, lease, newRun, now, queue, range, running, sleep, unique, workspace } from './fixtures';

const RUN_KEYS = [
  'id',
  'kind',
  'workspace_id',
  'started_by',
  'target_id',
  'target_version',
  'status',
  'source',
  'trigger_id',
  'request',
  'snapshot',
  'step_agents',
  'state',
  'credits_reserved',
  'credits_spent',
  'error',
  'accepted_at',
  'started_at',
  'finished_at',
  'cancel_requested_at',
  'cancelled_by',
  'approval_expires_at',
  'team',
  'parent_run_id',
  'visible_to',
].sort();
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe.each(adapters)('$name: runs', (adapter) => {
  const { store } = useStore(adapter);

  describe('acceptance and credits', () => {
    test('an accepted run is queued with its minimum cost reserved from a new workspace’s initial credits; find shows the projection', async () => {
      const ws = workspace();
      const id = unique('run');
      await queue(
        store,
        newRun(id, {
          workspaceId: ws,
          kind: 'agent',
          targetId: 'agent-1',
          targetVersion: 3,
          minimumCost: 4,
          initialCredits: 10,
          request: { prompt: 'p' },
          snapshotJson: '{"slug":"helper","name":"Helper","instructions":"long"}',
          stepAgentsJson: '{}',
          agent: { slug: 'helper', name: 'Helper' },
          state: { steps: 0 },
        }),
      );
      expect(await balance(store, ws)).toBe(6);
      const found = (await store.runs.find(id))!;
      expect(Object.keys(found).sort()).toEqual(RUN_KEYS);
      expect(found).toMatchObject({
        id,
        kind: 'agent',
        workspace_id: ws,
        started_by: 'user-1',
        target_id: 'agent-1',
        target_version: 3,
        status: 'queued',
        source: 'test',
        trigger_id: null,
        step_agents: null,
        credits_reserved: 4,
        credits_spent: 0,
        error: null,
        started_at: null,
        finished_at: null,
        cancel_requested_at: null,
        cancelled_by: null,
        approval_expires_at: null,
      });
      expect(found.accepted_at).toMatch(ISO_MS);
      expect(JSON.parse(found.request)).toEqual({ prompt: 'p' });
      expect(JSON.parse(found.state)).toEqual({ steps: 0 });
      expect(JSON.parse(found.snapshot!)).toEqual({ slug: 'helper', name: 'Helper' }); // only the agent's slug and name
      expect(await eventTypes(store, id)).toEqual(['run.queued']);
      expect(await store.runs.lastEvent(id)).toEqual({ seq: 1, type: 'run.queued' });
      // A workflow run's projection holds no document.
      const wf = unique('run');
      await queue(store, newRun(wf, { workspaceId: ws, targetVersion: 2 }));
      expect(await store.runs.find(wf)).toMatchObject({ kind: 'workflow', snapshot: null, step_agents: null, target_version: 2 });
      expect(await balance(store, ws)).toBe(5); // the initial credits are given once
      expect(await store.runs.find(unique('missing'))).toBeNull();
      expect(await store.runs.lastEvent(unique('missing'))).toBeNull();
    });

    test('a run the balance cannot cover is refused: kept with the refusal as its error, nothing reserved, its only event final', async () => {
      const ws = workspace();
      const id = unique('run');
      expect(await store.runs.accept(newRun(id, { workspaceId: ws, minimumCost: 11, initialCredits: 10 }), (b) => `only ${b}`)).toEqual({
        status: 'refused',
        balance: 10,
      });
      expect(await store.runs.find(id)).toMatchObject({
        status: 'refused',
        error: 'only 10',
        credits_reserved: 0,
        credits_spent: 0,
        finished_at: expect.stringMatching(ISO_MS),
      });
      expect(await balance(store, ws)).toBe(10);
      const events = await store.runs.events(id, 0, 10);
      expect(events.map((e) => [e.seq, e.type, JSON.parse(e.data)])).toEqual([[1, FINAL_EVENT, { status: 'refused', error: 'only 10' }]]);
      // Exactly the balance is enough.
      await queue(store, newRun(unique('run'), { workspaceId: ws, minimumCost: 10 }));
      expect(await balance(store, ws)).toBe(0);
    });

    test('concurrent acceptances never take a balance below zero: exactly as many are queued as it covers', async () => {
      const ws = workspace();
      const outcomes = await Promise.all(
        range(15).map(() => store.runs.accept(newRun(unique('run'), { workspaceId: ws, minimumCost: 2, initialCredits: 20 }), () => 'refused')),
      );
      expect(outcomes.filter((o) => o.status === 'queued')).toHaveLength(10);
      expect(outcomes.filter((o) => o.status === 'refused')).toHaveLength(5);
      expect(await balance(store, ws)).toBe(0);
    });

    test('debits are exact whatever the balance’s layout (PostgreSQL spreads it over rows): one no part covers alone takes from the whole, one the whole cannot cover is refused naming the whole; refunds and a set balance count', async () => {
      const ws = workspace();
      await queue(store, newRun(unique('run'), { workspaceId: ws, minimumCost: 1, initialCredits: 16 }));
      expect(await balance(store, ws)).toBe(15);
      await queue(store, newRun(unique('run'), { workspaceId: ws, minimumCost: 10 })); // more than any eighth of 15
      expect(await balance(store, ws)).toBe(5);
      expect(await store.runs.accept(newRun(unique('run'), { workspaceId: ws, minimumCost: 6 }), (b) => `only ${b}`)).toEqual({
        status: 'refused',
        balance: 5,
      });
      const id = unique('run');
      await running(store, newRun(id, { workspaceId: ws, minimumCost: 5 }));
      expect(await balance(store, ws)).toBe(0);
      expect(await store.runs.reserveMore(id, 1)).toBe(false);
      expect(await store.runs.finish(id, 'succeeded', null, {}, 2, now())).toBe(true); // 3 back
      expect(await balance(store, ws)).toBe(3);
      expect(await store.runs.reserveMore(id, 1)).toBe(false); // ended
      await store.workspaces.setCredits(ws, 7);
      expect(await balance(store, ws)).toBe(7);
      await queue(store, newRun(unique('run'), { workspaceId: ws, minimumCost: 7 }));
      expect(await balance(store, ws)).toBe(0);
    });

    test('of 120 concurrent acceptances of mixed costs against a small balance, each refusal saw less than its cost, and what was taken is exactly what left the balance', async () => {
      const ws = workspace();
      const costs = range(120).map((i) => 1 + (i % 3));
      const outcomes = await Promise.all(
        costs.map((minimumCost) => store.runs.accept(newRun(unique('run'), { workspaceId: ws, minimumCost, initialCredits: 150 }), () => 'refused')),
      );
      const taken = outcomes.reduce((sum, o, i) => sum + (o.status === 'queued' ? costs[i]! : 0), 0);
      outcomes.forEach((o, i) => {
        if (o.status === 'refused') expect(o.balance).toBeLessThan(costs[i]!);
        else expect(o.status).toBe('queued');
      });
      expect(await balance(store, ws)).toBe(150 - taken);
      expect(150 - taken).toBeLessThan(3); // the refusals saw less than their cost: at most 2 can be left
    });

    test('a run id accepted again is a fault (it rejects) and charges nothing', async () => {
      const ws = workspace();
      const id = unique('run');
      await queue(store, newRun(id, { workspaceId: ws, minimumCost: 3, initialCredits: 10 }));
      await expect(store.runs.accept(newRun(id, { workspaceId: ws, minimumCost: 3 }), () => 'refused')).rejects.toMatchObject({ message: expect.any(String) }); // (better-sqlite3's error may be of another realm's class)
      expect(await balance(store, ws)).toBe(7);
      expect(await eventTypes(store, id)).toEqual(['run.queued']);
    });
  });

  describe('the queue', () => {
    beforeEach(() => emptyQueue(store));

    test('claimNext takes the oldest queued run, with its documents and trace context, running under the lease; a workspace at its cap waits', async () => {
      const [busy, other] = [workspace(), workspace()];
      const prefix = unique('q'); // one prefix: runs accepted in the same millisecond are ordered by id
      const ids = range(4).map((i) => `${prefix}-${i}`);
      const traceParent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      await queue(store, newRun(ids[0]!, { workspaceId: busy, snapshotJson: '{"slug":"wf","steps":[1]}', stepAgentsJson: '{"a":{}}', traceParent }));
      await queue(store, newRun(ids[1]!, { workspaceId: busy }));
      await queue(store, newRun(ids[2]!, { workspaceId: busy }));
      await queue(store, newRun(ids[3]!, { workspaceId: other }));
      const first = (await store.runs.claimNext(lease('w'), 2))!;
      // The trace context of the request that queued it comes with the claim (whichever replica claims it).
      expect(first).toMatchObject({
        id: ids[0],
        status: 'running',
        snapshot: '{"slug":"wf","steps":[1]}',
        step_agents: '{"a":{}}',
        started_at: expect.stringMatching(ISO_MS),
        trace_parent: traceParent,
      });
      const second = (await store.runs.claimNext(lease('w'), 2))!;
      expect(second).toMatchObject({ id: ids[1], trace_parent: null });
      expect((await store.runs.claimNext(lease('w'), 2))!.id).toBe(ids[3]); // busy has 2 running
      expect(await store.runs.claimNext(lease('w'), 2)).toBeNull();
      expect((await store.runs.claimNext(lease('w'), 3))!.id).toBe(ids[2]);
      expect(await store.runs.find(ids[0]!)).toMatchObject({ status: 'running', started_at: first.started_at });
      expect(await eventTypes(store, ids[0]!)).toEqual(['run.queued', 'run.started']);
    });

    test('active counts the runs queued and running, whoever claimed them; finished ones are not counted', async () => {
      const before = await store.runs.active(); // runs other cases left running are counted too
      const ws = workspace();
      const ids = range(3).map(() => unique('active'));
      for (const id of ids) await queue(store, newRun(id, { workspaceId: ws }));
      expect(await store.runs.active()).toEqual({ queued: before.queued + 3, running: before.running });
      const claimed = (await store.runs.claimNext(lease('w'), 10))!;
      expect(await store.runs.active()).toEqual({ queued: before.queued + 2, running: before.running + 1 });
      await store.runs.finish(claimed.id, 'succeeded', null, {}, 1, now());
      expect(await store.runs.active()).toEqual({ queued: before.queued + 2, running: before.running });
    });

    it('claimNext returns a RunRow: its members (with trace_parent) and no others (no lease columns)', async () => {
      const id = unique('row');
      await queue(store, newRun(id, { workspaceId: workspace() }));
      const row = (await store.runs.claimNext(lease('w'), 10))!;
      expect(row.id).toBe(id);
      // A claim brings the run's trace context too; a projection (find) does not.
      expect(Object.keys(row).sort()).toEqual([...RUN_KEYS, 'trace_parent'].sort());
    });

    test('claim(id) is conditional on the run being queued and on its workspace’s cap; a run is claimed once, by id or as the oldest', async () => {
      const ws = workspace();
      const [a, b, c] = [unique('a'), unique('b'), unique('c')];
      await queue(store, newRun(a, { workspaceId: ws }));
      await queue(store, newRun(b, { workspaceId: ws }));
      await queue(store, newRun(c, { workspaceId: ws }));
      const [byId, oldest] = await Promise.all([store.runs.claim(a, lease('w'), 64), store.runs.claimNext(lease('w'), 64)]);
      // Whichever came first took `a`; the other took `b` (claimNext) or nothing (the claim by id).
      expect(oldest!.id).toBe(byId ? b : a);
      if (!byId) expect((await store.runs.claimNext(lease('w'), 64))!.id).toBe(b);
      expect(await store.runs.claim(a, lease('w'), 64)).toBe(false);
      expect(await store.runs.claim(b, lease('w'), 64)).toBe(false);
      expect(await store.runs.claim(c, lease('w'), 2)).toBe(false); // two running: the cap
      expect(await store.runs.find(c)).toMatchObject({ status: 'queued', started_at: null });
      expect(await store.runs.claim(c, lease('w'), 3)).toBe(true);
      expect(await store.runs.claim(unique('missing'), lease('w'), 64)).toBe(false);
      expect(await store.runs.claimNext(lease('w'), 64)).toBeNull();
      for (const id of [a, b, c]) expect(await eventTypes(store, id)).toEqual(['run.queued', 'run.started']);
    });

    test('an acceptance that offers a worker (claim) claims its run for it in the same write, under the workspace’s cap; at the cap, or refused, the run is not claimed', async () => {
      const ws = workspace();
      const worker = lease(unique('w'));
      const [a, b, c, d] = [unique('a'), unique('b'), unique('c'), unique('d')];
      expect(
        await store.runs.accept(newRun(a, { workspaceId: ws, minimumCost: 2, initialCredits: 10, claim: { lease: worker, cap: 2 } }), () => 'refused'),
      ).toEqual({ status: 'queued', claimed: true });
      const claimed = (await store.runs.find(a))!;
      expect(claimed).toMatchObject({ status: 'running', credits_reserved: 2, started_at: expect.stringMatching(ISO_MS) });
      expect(claimed.started_at! >= claimed.accepted_at).toBe(true);
      expect((await store.runs.events(a, 0, 10)).map((e) => [e.seq, e.type, JSON.parse(e.data)])).toEqual([
        [1, 'run.queued', { status: 'queued' }],
        [2, 'run.started', { status: 'running' }],
      ]);
      // Held under the worker's lease: it renews it, another owner does not; no queue claim finds it.
      expect(await store.runs.renewLeases(worker, [a])).toEqual([a]);
      expect(await store.runs.renewLeases(lease('someone-else'), [a])).toEqual([]);
      expect(await store.runs.claim(a, lease('w'), 64)).toBe(false);
      // A trigger's run (the acceptance's whole transaction) is claimed alike.
      expect(
        await store.runs.accept(
          newRun(b, { workspaceId: ws, source: 'webhook', triggerId: unique('trigger'), claim: { lease: worker, cap: 2 } }),
          () => 'refused',
        ),
      ).toEqual({ status: 'queued', claimed: true });
      expect(await eventTypes(store, b)).toEqual(['run.queued', 'run.started']);
      // Two running: at the cap, the next is queued, not claimed, and waits for the queue's claims.
      expect(await store.runs.accept(newRun(c, { workspaceId: ws, claim: { lease: worker, cap: 2 } }), () => 'refused')).toEqual({
        status: 'queued',
        claimed: false,
      });
      expect(await store.runs.find(c)).toMatchObject({ status: 'queued', started_at: null });
      expect(await eventTypes(store, c)).toEqual(['run.queued']);
      expect(await store.runs.renewLeases(worker, [a, b, c])).toEqual([a, b]);
      // A refused run is not claimed, and nothing is reserved.
      expect(await store.runs.accept(newRun(d, { workspaceId: ws, minimumCost: 100, claim: { lease: worker, cap: 64 } }), (left) => `only ${left}`)).toEqual({
        status: 'refused',
        balance: 6,
      });
      expect(await store.runs.find(d)).toMatchObject({ status: 'refused', started_at: null });
      expect(await balance(store, ws)).toBe(6);
      // The claimed run ends as any claimed run does, its reservation settled.
      expect(await store.runs.finish(a, 'succeeded', null, {}, 1, now())).toBe(true);
      expect(await balance(store, ws)).toBe(7);
      expect(await store.runs.claim(c, lease('w'), 2)).toBe(true);
    });

    test('of concurrent claims of one run, one wins; concurrent claimNext calls take different runs', async () => {
      const ws = workspace();
      const one = unique('one');
      await queue(store, newRun(one, { workspaceId: ws }));
      expect((await Promise.all(range(5).map(() => store.runs.claim(one, lease('w'), 100)))).filter(Boolean)).toHaveLength(1);
      const ids = range(10).map(() => unique('many'));
      for (const id of ids) await queue(store, newRun(id, { workspaceId: ws }));
      const rows = await Promise.all(range(12).map(() => store.runs.claimNext(lease('w'), 100)));
      const claimed = rows.filter((r) => r !== null).map((r) => r!.id);
      expect(claimed.sort()).toEqual([...ids].sort());
    });
  });

  describe('progress and end', () => {
    test('progress, more credits and an end change only a running run', async () => {
      const ws = workspace();
      const id = unique('run');
      await queue(store, newRun(id, { workspaceId: ws, minimumCost: 3, initialCredits: 10, state: { at: 'start' } }));
      expect(await store.runs.saveState(id, () => ({ state: { at: 'early' }, spent: 1 }))).toBe('not_running');
      expect(await store.runs.reserveMore(id, 1)).toBe(false);
      expect(await store.runs.finish(id, 'succeeded', null, { at: 'early' }, 1, now())).toBe(false);
      expect(await store.runs.find(id)).toMatchObject({ status: 'queued', state: '{"at":"start"}', credits_spent: 0, credits_reserved: 3 });
      expect(await balance(store, ws)).toBe(7);
      expect(await store.runs.saveState(unique('missing'), () => ({ state: {}, spent: 0 }))).toBe('not_running');
      expect(await store.runs.finish(unique('missing'), 'succeeded', null, {}, 0, now())).toBe(false);
      expect(await store.runs.reserveMore(unique('missing'), 1)).toBe(false);
    });

    test('saveState stores the state and what was spent (never above the reservation), with the events reported', async () => {
      const ws = workspace();
      const id = unique('run');
      await running(store, newRun(id, { workspaceId: ws, minimumCost: 2, initialCredits: 10 }));
      expect(
        await store.runs.saveState(id, () => ({
          state: { steps: 1 },
          spent: 1,
          events: [
            { type: 'step', data: { n: 1 }, at: '2030-01-01T00:00:00.000Z' },
            { type: 'tool', data: { n: 2 } },
          ],
        })),
      ).toBe('saved');
      expect(await store.runs.find(id)).toMatchObject({ state: '{"steps":1}', credits_spent: 1, credits_reserved: 2 });
      expect(await store.runs.saveState(id, () => ({ state: { steps: 3 }, spent: 3 }))).toBe('saved');
      expect(await store.runs.find(id)).toMatchObject({ state: '{"steps":3}', credits_spent: 2 });
      const events = await store.runs.events(id, 2, 10);
      expect(events.map((e) => [e.seq, e.type, JSON.parse(e.data)])).toEqual([
        [3, 'step', { n: 1 }],
        [4, 'tool', { n: 2 }],
      ]);
      expect(events[0]!.at).toBe('2030-01-01T00:00:00.000Z');
      expect(events[1]!.at).toMatch(ISO_MS);
    });

    test('saves made without waiting land in order, the last state winning, every event kept in order', async () => {
      const ws = workspace();
      const id = unique('run');
      await running(store, newRun(id, { workspaceId: ws, minimumCost: 10, initialCredits: 100 }));
      const saves = range(10).map((k) => store.runs.saveState(id, () => ({ state: { k }, spent: k, events: [{ type: 'step', data: { k } }] })));
      const end = store.runs.finish(id, 'succeeded', null, { k: 'end' }, 10, now());
      expect(await Promise.all(saves)).toEqual(range(10).map(() => 'saved'));
      expect(await end).toBe(true);
      const events = await store.runs.events(id, 0, 100);
      expect(events.map((e) => e.type)).toEqual(['run.queued', 'run.started', ...range(10).map(() => 'step'), FINAL_EVENT]);
      expect(events.filter((e) => e.type === 'step').map((e) => JSON.parse(e.data).k)).toEqual(range(10));
      expect(await store.runs.find(id)).toMatchObject({ status: 'succeeded', state: '{"k":"end"}', credits_spent: 10 });
    });

    test('reserveMore moves credits from the balance to the reservation, only while the balance covers them', async () => {
      const ws = workspace();
      const id = unique('run');
      await running(store, newRun(id, { workspaceId: ws, minimumCost: 2, initialCredits: 5 }));
      expect(await store.runs.reserveMore(id, 2)).toBe(true);
      expect(await store.runs.find(id)).toMatchObject({ credits_reserved: 4 });
      expect(await balance(store, ws)).toBe(1);
      expect(await store.runs.reserveMore(id, 2)).toBe(false);
      expect(await store.runs.find(id)).toMatchObject({ credits_reserved: 4 });
      expect(await balance(store, ws)).toBe(1);
      expect(await store.runs.reserveMore(id, 1)).toBe(true);
      expect(await balance(store, ws)).toBe(0);
    });

    test('finish ends a running run with what it spent (capped at its reservation), returns the rest, and adds the events and the final one; a second end changes nothing', async () => {
      const ws = workspace();
      const id = unique('run');
      await running(store, newRun(id, { workspaceId: ws, minimumCost: 5, initialCredits: 10 }));
      const at = '2030-01-01T00:00:09.000Z';
      expect(await store.runs.finish(id, 'failed', 'boom', { done: true }, 2, at, [{ type: 'step', data: { last: true } }])).toBe(true);
      expect(await store.runs.find(id)).toMatchObject({
        status: 'failed',
        error: 'boom',
        state: '{"done":true}',
        credits_spent: 2,
        credits_reserved: 2,
        finished_at: at,
      });
      expect(await balance(store, ws)).toBe(8);
      const events = await store.runs.events(id, 0, 10);
      expect(events.slice(-2).map((e) => [e.type, JSON.parse(e.data), e.at])).toEqual([
        ['step', { last: true }, at],
        [FINAL_EVENT, { status: 'failed', error: 'boom' }, at],
      ]);
      expect(await store.runs.lastEvent(id)).toEqual({ seq: 4, type: FINAL_EVENT });
      expect(await store.runs.finish(id, 'succeeded', null, {}, 0, now())).toBe(false);
      expect(await store.runs.find(id)).toMatchObject({ status: 'failed', credits_spent: 2 });
      expect(await balance(store, ws)).toBe(8);
      // Spending more than the reservation is charged the reservation.
      const over = unique('run');
      await running(store, newRun(over, { workspaceId: ws, minimumCost: 3 }));
      expect(await store.runs.finish(over, 'succeeded', null, {}, 50, now())).toBe(true);
      expect(await store.runs.find(over)).toMatchObject({ status: 'succeeded', error: null, credits_spent: 3, credits_reserved: 3 });
      expect(await balance(store, ws)).toBe(5);
    });

    test('credits stay exact over many runs: balance + spent = initial, and a run’s spent = its reservation once ended', async () => {
      const ws = workspace();
      const initial = 100;
      const ids = range(20).map(() => unique('credit'));
      for (const id of ids) await running(store, newRun(id, { workspaceId: ws, minimumCost: 3, initialCredits: initial }));
      expect(await balance(store, ws)).toBe(40);
      expect(await store.runs.accept(newRun(unique('run'), { workspaceId: ws, minimumCost: 41 }), (b) => `only ${b}`)).toEqual({
        status: 'refused',
        balance: 40,
      });
      // 20 runs × 5 more each, asked for at once: the 40 left cover exactly 40 of them.
      const more = await Promise.all(ids.flatMap((id) => range(5).map(() => store.runs.reserveMore(id, 1))));
      expect(more.filter(Boolean)).toHaveLength(40);
      expect(await balance(store, ws)).toBe(0);
      const reserved = await Promise.all(ids.map(async (id) => (await store.runs.find(id))!.credits_reserved));
      const spends = ids.map((_, i) => i % 9);
      await Promise.all(ids.map((id, i) => store.runs.finish(id, 'succeeded', null, {}, spends[i]!, now())));
      const rows = await Promise.all(ids.map(async (id) => (await store.runs.find(id))!));
      expect(rows.map((r) => r.credits_spent)).toEqual(ids.map((_, i) => Math.min(spends[i]!, reserved[i]!)));
      for (const r of rows) expect(r.credits_reserved).toBe(r.credits_spent);
      expect((await balance(store, ws)) + rows.reduce((sum, r) => sum + r.credits_spent, 0)).toBe(initial);
    });
  });
});

// Recovery fails every abandoned run of the database: these cases have a store of their own.
describe.each(adapters)('$name: leases', (adapter) => {
  const { store } = useStore(adapter);

  test('renewLeases extends the leases the owner still holds, and returns only those runs', async () => {
    const ws = workspace();
    const [r1, r2, r3] = [unique('renew'), unique('renew'), unique('renew')];
    for (const id of [r1, r2, r3]) await queue(store, newRun(id, { workspaceId: ws }));
    await store.runs.claim(r1, lease('renew-a', 200), 10);
    await store.runs.claim(r2, lease('renew-a', 200), 10);
    await store.runs.claim(r3, lease('renew-b', 60_000), 10);
    expect(await store.runs.finish(r2, 'succeeded', null, {}, 0, now())).toBe(true);
    expect(await store.runs.renewLeases(lease('renew-a', 60_000), [r1, r2, r3, unique('missing')])).toEqual([r1]);
    expect(await store.runs.renewLeases(lease('renew-a', 60_000), [])).toEqual([]);
    await sleep(400); // past the first lease: renewed, r1 is not abandoned
    expect(await store.runs.recoverAbandoned('abandoned')).toBe(0);
    expect(await store.runs.find(r1)).toMatchObject({ status: 'running' });
    expect(await store.runs.releaseAll('renew-a', 'done')).toBe(1);
    expect(await store.runs.releaseAll('renew-b', 'done')).toBe(1);
  });

  test('an expired lease is recovered once, with the message and the refund of what was not spent; a live one is not; the worker’s later writes do not land', async () => {
    const ws = workspace();
    const [expired, live] = [unique('expired'), unique('live')];
    await queue(store, newRun(expired, { workspaceId: ws, minimumCost: 5, initialCredits: 20 }));
    await queue(store, newRun(live, { workspaceId: ws, minimumCost: 5 }));
    expect(await store.runs.claim(expired, lease('short', 100), 10)).toBe(true);
    expect(await store.runs.claim(live, lease('long'), 10)).toBe(true);
    expect(await store.runs.saveState(expired, () => ({ state: { step: 1 }, spent: 2 }))).toBe('saved');
    await sleep(300);
    expect(await store.runs.recoverAbandoned('abandoned')).toBe(1);
    expect(await store.runs.recoverAbandoned('abandoned')).toBe(0);
    expect(await store.runs.find(expired)).toMatchObject({
      status: 'failed',
      error: 'abandoned',
      credits_reserved: 2,
      credits_spent: 2,
      state: '{"step":1}',
      finished_at: expect.stringMatching(ISO_MS),
    });
    expect(await store.runs.find(live)).toMatchObject({ status: 'running' });
    expect(await balance(store, ws)).toBe(20 - 2 - 5);
    const events = await store.runs.events(expired, 0, 10);
    expect(events.map((e) => e.type)).toEqual(['run.queued', 'run.started', FINAL_EVENT]);
    expect(JSON.parse(events[2]!.data)).toEqual({ status: 'failed', error: 'abandoned' });
    expect(await store.runs.renewLeases(lease('short'), [expired])).toEqual([]);
    expect(await store.runs.saveState(expired, () => ({ state: { step: 2 }, spent: 3 }))).toBe('not_running');
    expect(await store.runs.reserveMore(expired, 1)).toBe(false);
    expect(await store.runs.finish(expired, 'succeeded', null, {}, 4, now())).toBe(false);
    expect(await store.runs.find(expired)).toMatchObject({ status: 'failed', state: '{"step":1}', credits_spent: 2 });
    expect(await balance(store, ws)).toBe(13);
    expect(await store.runs.releaseAll('long', 'done')).toBe(1);
  });

  test('releaseAll fails the runs one owner holds, refunded, and leaves the others', async () => {
    const ws = workspace();
    const [one, two, other] = [unique('release'), unique('release'), unique('release')];
    for (const id of [one, two, other]) await queue(store, newRun(id, { workspaceId: ws, minimumCost: 3, initialCredits: 30 }));
    await store.runs.claim(one, lease('stopping'), 10);
    await store.runs.claim(two, lease('stopping'), 10);
    await store.runs.claim(other, lease('staying'), 10);
    await store.runs.saveState(one, () => ({ state: {}, spent: 1 }));
    expect(await store.runs.releaseAll('stopping', 'shut down')).toBe(2);
    expect(await store.runs.releaseAll('stopping', 'shut down')).toBe(0);
    expect(await store.runs.find(one)).toMatchObject({ status: 'failed', error: 'shut down', credits_reserved: 1, credits_spent: 1 });
    expect(await store.runs.find(two)).toMatchObject({ status: 'failed', error: 'shut down', credits_reserved: 0 });
    expect(await store.runs.find(other)).toMatchObject({ status: 'running' });
    expect(await balance(store, ws)).toBe(30 - 1 - 3);
    expect((await eventTypes(store, one)).slice(-1)).toEqual([FINAL_EVENT]);
    expect(await store.runs.releaseAll('staying', 'done')).toBe(1);
  });

  // The interface documents this difference: SQLite's `self` (the serve lock makes a starting
  // runner the file's only server) fails the runs any other owner holds; PostgreSQL ignores it
  // (other replicas' runs are live).
  test('recoverAbandoned with the starting runner’s name: SQLite fails other owners’ live runs, PostgreSQL leaves them', async () => {
    const ws = workspace();
    const [theirs, mine] = [unique('theirs'), unique('mine')];
    await queue(store, newRun(theirs, { workspaceId: ws, minimumCost: 2, initialCredits: 10 }));
    await queue(store, newRun(mine, { workspaceId: ws, minimumCost: 2 }));
    await store.runs.claim(theirs, lease('previous-runner'), 10);
    await store.runs.claim(mine, lease('starting-runner'), 10);
    const recovered = await store.runs.recoverAbandoned('interrupted', 'starting-runner');
    expect(await store.runs.find(mine)).toMatchObject({ status: 'running' });
    if (adapter.name === 'sqlite') {
      expect(recovered).toBe(1);
      expect(await store.runs.find(theirs)).toMatchObject({ status: 'failed', error: 'interrupted', credits_reserved: 0 });
      expect(await balance(store, ws)).toBe(8);
    } else {
      expect(recovered).toBe(0);
      expect(await store.runs.find(theirs)).toMatchObject({ status: 'running' });
      expect(await store.runs.releaseAll('previous-runner', 'done')).toBe(1);
    }
    expect(await store.runs.releaseAll('starting-runner', 'done')).toBe(1);
  });
});
