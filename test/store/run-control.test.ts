// A run's control: parked while held tool calls wait for approval (holding no reservation), the
// decisions (the first one wins, the last one queues the run again), approvals that expire, and
// cancels of queued, parked and running runs — each case on both adapters.
import { adapters, useStore, APPROVAL_EXPIRED, FINAL_EVENT } from './adapters';
import { balance, eventTypes, lease, newRun, now, queue, range, running, sleep, unique, workspace } from './fixtures';

const FUTURE = '2099-01-01T00:00:00.000Z';

describe.each(adapters)('$name: run control', (adapter) => {
  const { store } = useStore(adapter);

  /** A running run (cost 4 of 100) parked with these held calls, having spent 1. */
  async function parked(ws: string, calls: string[], expiresAt = FUTURE): Promise<string> {
    const id = unique('parked');
    await running(store, newRun(id, { workspaceId: ws, kind: 'agent', minimumCost: 4, initialCredits: 100 }));
    const state = { tool_calls: calls.map((c) => ({ id: c, status: 'awaiting_approval' })) };
    const held = calls.map((c) => ({ id: c, tool: 'kv.delete' }));
    expect(await store.runs.park(id, { state, spent: 1, calls: held, expiresAt, events: [{ type: 'step', data: { n: 1 } }] }, now())).toBe('parked');
    return id;
  }

  describe('parking and decisions', () => {
    test('a parked run awaits approval, keeps only what it spent, and says which calls wait', async () => {
      const ws = workspace();
      const id = await parked(ws, ['c1', 'c2']);
      expect(await store.runs.find(id)).toMatchObject({ status: 'awaiting_approval', credits_reserved: 1, credits_spent: 1, approval_expires_at: FUTURE });
      expect(await balance(store, ws)).toBe(99);
      const events = await store.runs.events(id, 0, 10);
      expect(events.map((e) => e.type)).toEqual(['run.queued', 'run.started', 'step', 'run.awaiting_approval']);
      expect(JSON.parse(events[3]!.data)).toEqual({
        status: 'awaiting_approval',
        calls: [
          { id: 'c1', tool: 'kv.delete' },
          { id: 'c2', tool: 'kv.delete' },
        ],
        expires_at: FUTURE,
      });
      // It holds no worker: progress and an end do not land, and it is not abandoned.
      expect(await store.runs.saveState(id, () => ({ state: {}, spent: 2 }))).toBe('not_running');
      expect(await store.runs.finish(id, 'succeeded', null, {}, 1, now())).toBe(false);
      expect(await store.runs.claim(id, lease('w'), 100)).toBe(false);
    });

    test('park changes only a running run: not_running otherwise; cancel_requested (nothing written) once a cancel was asked', async () => {
      const ws = workspace();
      const parking = { state: {}, spent: 1, calls: [{ id: 'c', tool: 't' }], expiresAt: FUTURE, events: [] };
      const queued = unique('queued');
      await queue(store, newRun(queued, { workspaceId: ws }));
      expect(await store.runs.park(queued, parking, now())).toBe('not_running');
      expect(await store.runs.park(unique('missing'), parking, now())).toBe('not_running');
      const stopping = unique('stopping');
      await running(store, newRun(stopping, { workspaceId: ws, minimumCost: 2 }));
      expect(await store.runs.cancel(stopping, 'user-2', now())).toEqual({ outcome: 'requested' });
      expect(await store.runs.park(stopping, parking, now())).toBe('cancel_requested');
      expect(await store.runs.find(stopping)).toMatchObject({ status: 'running', credits_reserved: 2, approval_expires_at: null });
      expect(await store.runs.decide(stopping, 'c', 'approve', null, 'u', now())).toEqual({ outcome: 'no_call' });
    });

    test('decisions: the first of two calls is `decided`, the last `resumed` (queued again, the decisions in its state); a decided call is `decided_before`', async () => {
      const ws = workspace();
      const id = await parked(ws, ['c1', 'c2']);
      const at = '2030-01-01T00:00:05.000Z';
      expect(await store.runs.decide(id, 'c1', 'approve', 'fine', 'user-1', at)).toEqual({ outcome: 'decided' });
      expect(await store.runs.find(id)).toMatchObject({ status: 'awaiting_approval' });
      expect(JSON.parse((await store.runs.find(id))!.state).tool_calls[0]).toEqual({
        id: 'c1',
        status: 'awaiting_approval',
        approval: { decision: 'approve', note: 'fine', decided_by: 'user-1', decided_at: at },
      });
      expect(await store.runs.decide(id, 'c1', 'reject', null, 'user-2', now())).toEqual({
        outcome: 'decided_before',
        approval: {
          run_id: id,
          call_id: 'c1',
          tool: 'kv.delete',
          requested_at: expect.any(String),
          decision: 'approve',
          note: 'fine',
          decided_by: 'user-1',
          decided_at: at,
        },
      });
      expect(await store.runs.decide(id, 'c2', 'reject', null, 'user-2', at)).toEqual({ outcome: 'resumed' });
      const run = (await store.runs.find(id))!;
      expect(run).toMatchObject({ status: 'queued', approval_expires_at: null });
      expect(JSON.parse(run.state).tool_calls.map((c: { approval: { decision: string } }) => c.approval.decision)).toEqual(['approve', 'reject']);
      const events = await store.runs.events(id, 4, 10);
      expect(events.map((e) => [e.type, JSON.parse(e.data)])).toEqual([
        ['approval.decided', { call_id: 'c1', decision: 'approve', decided_by: 'user-1' }],
        ['approval.decided', { call_id: 'c2', decision: 'reject', decided_by: 'user-2' }],
        ['run.queued', { status: 'queued' }],
      ]);
      expect(await store.runs.decide(id, 'c3', 'approve', null, 'u', now())).toEqual({ outcome: 'no_call' });
      expect(await store.runs.decide(unique('missing'), 'c1', 'approve', null, 'u', now())).toEqual({ outcome: 'no_call' });
    });

    test('a resumed run is claimed again: its start is its last claim; it can end or park again', async () => {
      const ws = workspace();
      const id = await parked(ws, ['c1']);
      const firstStart = (await store.runs.find(id))!.started_at!;
      expect(await store.runs.decide(id, 'c1', 'approve', null, 'u', now())).toEqual({ outcome: 'resumed' });
      await sleep(5);
      expect(await store.runs.claim(id, lease('w'), 100)).toBe(true);
      const restarted = (await store.runs.find(id))!;
      expect(restarted.status).toBe('running');
      expect(restarted.started_at! > firstStart).toBe(true);
      // Its reservation is what it had spent: the end settles from there.
      expect(restarted).toMatchObject({ credits_reserved: 1, credits_spent: 1 });
      expect(await store.runs.reserveMore(id, 2)).toBe(true);
      expect(await store.runs.finish(id, 'succeeded', null, {}, 2, now())).toBe(true);
      expect(await balance(store, ws)).toBe(98);
      expect(await eventTypes(store, id)).toEqual([
        'run.queued',
        'run.started',
        'step',
        'run.awaiting_approval',
        'approval.decided',
        'run.queued',
        'run.started',
        FINAL_EVENT,
      ]);
    });

    test('one call decided twice at once: one decision wins, the other is told it', async () => {
      const ws = workspace();
      const id = await parked(ws, ['call-1']);
      const [a, b] = await Promise.all([
        store.runs.decide(id, 'call-1', 'approve', null, 'user-a', now()),
        store.runs.decide(id, 'call-1', 'reject', 'no', 'user-b', now()),
      ]);
      expect([a.outcome, b.outcome].sort()).toEqual(['decided_before', 'resumed']);
      const winner = a.outcome === 'resumed' ? 'user-a' : 'user-b';
      const loser = (a.outcome === 'decided_before' ? a : b) as { approval: { decided_by: string } };
      expect(loser.approval.decided_by).toBe(winner);
      expect(JSON.parse((await store.runs.find(id))!.state).tool_calls[0].approval).toMatchObject({ decided_by: winner });
      expect(await eventTypes(store, id)).toEqual(['run.queued', 'run.started', 'step', 'run.awaiting_approval', 'approval.decided', 'run.queued']);
    });

    test('two calls of one run decided at once: the last one resumes the run', async () => {
      const ws = workspace();
      for (let i = 0; i < 3; i++) {
        const id = await parked(ws, ['call-1', 'call-2']);
        const outcomes = await Promise.all([
          store.runs.decide(id, 'call-1', 'approve', null, 'user-a', now()),
          store.runs.decide(id, 'call-2', 'approve', null, 'user-b', now()),
        ]);
        expect(outcomes.map((o) => o.outcome).sort()).toEqual(['decided', 'resumed']);
        const run = (await store.runs.find(id))!;
        expect(run.status).toBe('queued');
        expect(JSON.parse(run.state).tool_calls.map((c: { approval: { decided_by: string } }) => c.approval.decided_by)).toEqual(['user-a', 'user-b']);
      }
    });

    test('a parked run past its expiry fails: by a late decision (with APPROVAL_EXPIRED) or by expireApprovals (with its message), once', async () => {
      const ws = workspace();
      const past = new Date(Date.now() - 1000).toISOString();
      const late = await parked(ws, ['c'], past);
      const swept = await parked(ws, ['c'], past);
      const waiting = await parked(ws, ['c']);
      expect(await store.runs.decide(late, 'c', 'approve', null, 'u', now())).toEqual({ outcome: 'not_waiting', status: 'failed' });
      expect(await store.runs.find(late)).toMatchObject({ status: 'failed', error: APPROVAL_EXPIRED, finished_at: expect.any(String) });
      expect(await store.runs.expireApprovals('too late', now())).toBe(1);
      expect(await store.runs.expireApprovals('too late', now())).toBe(0);
      expect(await store.runs.find(swept)).toMatchObject({ status: 'failed', error: 'too late' });
      expect(await store.runs.find(waiting)).toMatchObject({ status: 'awaiting_approval' });
      const events = await store.runs.events(swept, 0, 10);
      expect(events.map((e) => e.type).slice(-1)).toEqual([FINAL_EVENT]);
      expect(JSON.parse(events[events.length - 1]!.data)).toEqual({ status: 'failed', error: 'too late' });
      expect(await store.runs.decide(swept, 'c', 'approve', null, 'u', now())).toEqual({ outcome: 'not_waiting', status: 'failed' });
      expect(await store.runs.cancel(swept, 'u', now())).toEqual({ outcome: 'finished', status: 'failed' });
      expect(await balance(store, ws)).toBe(97); // each spent 1; nothing more was held
    });
  });

  describe('cancel', () => {
    test('a queued run is cancelled at once: refunded, ended, with who cancelled it; asked again it is `cancelled`', async () => {
      const ws = workspace();
      const id = unique('queued');
      await queue(store, newRun(id, { workspaceId: ws, minimumCost: 3, initialCredits: 10 }));
      const at = '2030-01-01T00:00:01.000Z';
      expect(await store.runs.cancel(id, 'user-1', at)).toEqual({ outcome: 'cancelled' });
      expect(await store.runs.find(id)).toMatchObject({
        status: 'cancelled',
        finished_at: at,
        cancel_requested_at: at,
        cancelled_by: 'user-1',
        credits_reserved: 0,
        credits_spent: 0,
      });
      expect(await balance(store, ws)).toBe(10);
      const events = await store.runs.events(id, 0, 10);
      expect(events.map((e) => [e.type, JSON.parse(e.data)])).toEqual([
        ['run.queued', { status: 'queued' }],
        [FINAL_EVENT, { status: 'cancelled', error: null, cancelled_by: 'user-1' }],
      ]);
      expect(await store.runs.cancel(id, 'user-2', now())).toEqual({ outcome: 'cancelled' });
      expect(await store.runs.find(id)).toMatchObject({ cancelled_by: 'user-1' });
      expect(await store.runs.claim(id, lease('w'), 10)).toBe(false);
      expect(await store.runs.cancel(unique('missing'), 'u', now())).toEqual({ outcome: 'missing' });
    });

    test('a running run is asked to stop (once: the first asker is kept); saveState says so; it ends cancelled', async () => {
      const ws = workspace();
      const id = unique('running');
      await running(store, newRun(id, { workspaceId: ws, minimumCost: 2, initialCredits: 10 }));
      const at = '2030-01-01T00:00:02.000Z';
      expect(await store.runs.cancel(id, 'user-2', at)).toEqual({ outcome: 'requested' });
      expect(await store.runs.cancel(id, 'user-3', now())).toEqual({ outcome: 'requested' });
      expect(await store.runs.find(id)).toMatchObject({ status: 'running', cancel_requested_at: at, cancelled_by: 'user-2' });
      expect(await store.runs.saveState(id, () => ({ state: { s: 1 }, spent: 1 }))).toBe('cancel_requested');
      expect(await store.runs.find(id)).toMatchObject({ state: '{"s":1}', credits_spent: 1 });
      expect(await store.runs.finish(id, 'cancelled', null, {}, 1, now())).toBe(true);
      expect(await store.runs.find(id)).toMatchObject({ status: 'cancelled', cancelled_by: 'user-2', cancel_requested_at: at, credits_spent: 1 });
      expect(await balance(store, ws)).toBe(9);
      expect(await eventTypes(store, id)).toEqual(['run.queued', 'run.started', 'run.cancel_requested', FINAL_EVENT]);
      expect(await store.runs.cancel(id, 'user-2', now())).toEqual({ outcome: 'cancelled' });
    });

    test('a cancel that came too late (the run ended otherwise) leaves no trace; an ended run is `finished` with its status', async () => {
      const ws = workspace();
      const id = unique('late-cancel');
      await running(store, newRun(id, { workspaceId: ws }));
      expect(await store.runs.cancel(id, 'user-2', now())).toEqual({ outcome: 'requested' });
      expect(await store.runs.finish(id, 'succeeded', null, {}, 1, now())).toBe(true);
      expect(await store.runs.find(id)).toMatchObject({ status: 'succeeded', cancel_requested_at: null, cancelled_by: null });
      expect(await store.runs.cancel(id, 'user-2', now())).toEqual({ outcome: 'finished', status: 'succeeded' });
      const refused = unique('refused');
      await store.runs.accept(newRun(refused, { workspaceId: ws, minimumCost: 10_000 }), () => 'no');
      expect(await store.runs.cancel(refused, 'u', now())).toEqual({ outcome: 'finished', status: 'refused' });
    });

    test('a parked run is cancelled at once; its held calls can no longer be decided', async () => {
      const ws = workspace();
      const id = await parked(ws, ['c1']);
      expect(await store.runs.cancel(id, 'user-1', now())).toEqual({ outcome: 'cancelled' });
      expect(await store.runs.find(id)).toMatchObject({ status: 'cancelled', cancelled_by: 'user-1', credits_reserved: 1, credits_spent: 1 });
      expect(await balance(store, ws)).toBe(99);
      expect(await store.runs.decide(id, 'c1', 'approve', null, 'u', now())).toEqual({ outcome: 'not_waiting', status: 'cancelled' });
      await store.runs.expireApprovals('expired', FUTURE);
      expect(await store.runs.find(id)).toMatchObject({ status: 'cancelled', error: null });
    });

    test('cancels racing claims of queued runs: each run is cancelled or claimed, never both; credits follow', async () => {
      const ws = workspace();
      const ids = range(10).map(() => unique('cancel-claim'));
      for (const id of ids) await queue(store, newRun(id, { workspaceId: ws, minimumCost: 2, initialCredits: 100 }));
      const [cancels, claims] = await Promise.all([
        Promise.all(ids.map((id) => store.runs.cancel(id, 'user-2', now()))),
        Promise.all(ids.map((id) => store.runs.claim(id, lease('w'), 100))),
      ]);
      for (const [i, id] of ids.entries()) {
        const run = (await store.runs.find(id))!;
        if (claims[i]) {
          expect(cancels[i]).toEqual({ outcome: 'requested' });
          expect(run).toMatchObject({ status: 'running', cancelled_by: 'user-2' });
          expect(await eventTypes(store, id)).toEqual(['run.queued', 'run.started', 'run.cancel_requested']);
        } else {
          expect(cancels[i]).toEqual({ outcome: 'cancelled' });
          expect(run).toMatchObject({ status: 'cancelled', credits_reserved: 0 });
          expect(await eventTypes(store, id)).toEqual(['run.queued', FINAL_EVENT]);
        }
      }
      expect(await balance(store, ws)).toBe(100 - 2 * claims.filter(Boolean).length);
    });

    test('cancels racing the worker’s ends: one outcome per run, refunded once', async () => {
      const ws = workspace();
      const ids = range(10).map(() => unique('cancel-finish'));
      for (const id of ids) await running(store, newRun(id, { workspaceId: ws, minimumCost: 3, initialCredits: 100 }));
      const [cancels, finishes] = await Promise.all([
        Promise.all(ids.map((id) => store.runs.cancel(id, 'user-2', now()))),
        Promise.all(ids.map((id) => store.runs.finish(id, 'succeeded', null, {}, 1, now()))),
      ]);
      expect(finishes.every(Boolean)).toBe(true); // a cancel only asks a running run to stop
      for (const [i, id] of ids.entries()) {
        expect(['requested', 'finished']).toContain(cancels[i]!.outcome);
        expect(await store.runs.find(id)).toMatchObject({ status: 'succeeded', cancel_requested_at: null, cancelled_by: null });
        expect((await eventTypes(store, id)).filter((t) => t === FINAL_EVENT)).toHaveLength(1);
      }
      expect(await balance(store, ws)).toBe(100 - 10);
    });
  });
  test("activeChildren: the runs a run's tool calls started that have not ended, with their link and reader kept", async () => {
    const ws = workspace();
    const parent = unique('parent');
    await running(store, newRun(parent, { workspaceId: ws, kind: 'agent' }));
    const [queuedChild, runningChild, endedChild] = [unique('child'), unique('child'), unique('child')];
    const child = (id: string) => newRun(id, { workspaceId: ws, kind: 'workflow', source: 'tool', parent: { runId: parent }, visibleTo: 'user-1' });
    await queue(store, child(queuedChild));
    await running(store, child(runningChild));
    await running(store, child(endedChild));
    expect(await store.runs.finish(endedChild, 'succeeded', null, {}, 1, now())).toBe(true);
    await queue(store, newRun(unique('stranger'), { workspaceId: ws }));
    expect((await store.runs.activeChildren(parent)).sort()).toEqual([queuedChild, runningChild].sort());
    expect(await store.runs.find(queuedChild)).toMatchObject({ source: 'tool', parent_run_id: parent, visible_to: 'user-1' });
    expect(await store.runs.activeChildren(queuedChild)).toEqual([]);
    expect(await store.runs.cancel(queuedChild, 'user-1', now())).toEqual({ outcome: 'cancelled' });
    expect(await store.runs.activeChildren(parent)).toEqual([runningChild]);
  });
});
