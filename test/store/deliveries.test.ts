// Webhook deliveries: a delivery's id is recorded with the run it starts, so a repeat within the
// window starts nothing and is told the first run and its reply; the trigger's rate is counted in
// the same write; old deliveries are pruned — each case on both adapters.
import { adapters, useStore, FINAL_EVENT, type NewRun } from './adapters';
import { eventTypes, newRun, unique, workspace } from './fixtures';

describe.each(adapters)('$name: deliveries', (adapter) => {
  const { store } = useStore(adapter);

  const minuteAgo = () => new Date(Date.now() - 60_000).toISOString();
  const delivered = (id: string, ws: string, trigger: string, key: string, more: Partial<NewRun> = {}) =>
    newRun(id, { workspaceId: ws, kind: 'agent', source: 'webhook', triggerId: trigger, delivery: { key, since: minuteAgo() }, ...more });

  test('a delivery starts a run and is recorded with it (reply 202); a repeat within the window writes nothing and is told the first run', async () => {
    const ws = workspace();
    const trigger = unique('trigger');
    const first = unique('run');
    expect(await store.runs.accept(delivered(first, ws, trigger, 'msg-1', { minimumCost: 2 }), () => 'refused')).toEqual({ status: 'queued', claimed: false });
    expect(await store.webhooks.delivery(trigger, 'msg-1', minuteAgo())).toEqual({ runId: first, httpStatus: 202 });
    const repeat = unique('run');
    expect(await store.runs.accept(delivered(repeat, ws, trigger, 'msg-1', { minimumCost: 2 }), () => 'refused')).toEqual({
      status: 'repeated',
      runId: first,
      httpStatus: 202,
    });
    expect(await store.runs.find(repeat)).toBeNull();
    expect(await store.workspaces.credits(ws, 0)).toBe(998); // charged once
    // Another key, or the same key on another trigger, is another delivery.
    expect(await store.runs.accept(delivered(unique('run'), ws, trigger, 'msg-2'), () => 'refused')).toEqual({ status: 'queued', claimed: false });
    expect(await store.runs.accept(delivered(unique('run'), ws, unique('trigger'), 'msg-1'), () => 'refused')).toEqual({ status: 'queued', claimed: false });
  });

  test('concurrent deliveries of one key: one run, the others repeated with its id and reply', async () => {
    const ws = workspace();
    const trigger = unique('trigger');
    const ids = Array.from({ length: 8 }, () => unique('run'));
    const outcomes = await Promise.all(ids.map((id) => store.runs.accept(delivered(id, ws, trigger, 'same', { minimumCost: 2 }), () => 'refused')));
    expect(outcomes.filter((o) => o.status === 'queued')).toHaveLength(1);
    const winner = ids[outcomes.findIndex((o) => o.status === 'queued')]!;
    for (const o of outcomes) if (o.status !== 'queued') expect(o).toEqual({ status: 'repeated', runId: winner, httpStatus: 202 });
    for (const id of ids) expect((await store.runs.find(id))?.id ?? null).toBe(id === winner ? winner : null);
    expect(await store.workspaces.credits(ws, 0)).toBe(998);
  });

  test('past the repeat window the key starts a run again, and the delivery then names it', async () => {
    const ws = workspace();
    const trigger = unique('trigger');
    const first = unique('run');
    await store.runs.accept(delivered(first, ws, trigger, 'k'), () => 'refused');
    const later = unique('run');
    const since = new Date(Date.now() + 1000).toISOString(); // the first one is older than this window
    expect(
      await store.runs.accept(newRun(later, { workspaceId: ws, source: 'webhook', triggerId: trigger, delivery: { key: 'k', since } }), () => 'refused'),
    ).toEqual({ status: 'queued', claimed: false });
    expect(await store.webhooks.delivery(trigger, 'k', minuteAgo())).toEqual({ runId: later, httpStatus: 202 });
  });

  test('a refused delivery is recorded with reply 409 and told to its repeats; a refusal has only its final event', async () => {
    const ws = workspace();
    const trigger = unique('trigger');
    const refused = unique('run');
    const run = (id: string) => delivered(id, ws, trigger, 'k', { minimumCost: 5, initialCredits: 1 });
    expect(await store.runs.accept(run(refused), (b) => `only ${b}`)).toEqual({ status: 'refused', balance: 1 });
    expect(await store.runs.accept(run(unique('run')), (b) => `only ${b}`)).toEqual({ status: 'repeated', runId: refused, httpStatus: 409 });
    expect(await store.webhooks.delivery(trigger, 'k', minuteAgo())).toEqual({ runId: refused, httpStatus: 409 });
    expect(await eventTypes(store, refused)).toEqual([FINAL_EVENT]);
    // A refusal is no start.
    expect((await store.runs.lastStartedBy([trigger])).has(trigger)).toBe(false);
  });

  test('delivery() finds a delivery received at or after `since` only; a key PostgreSQL cannot hold is none', async () => {
    const ws = workspace();
    const trigger = unique('trigger');
    const run = unique('run');
    const before = new Date(Date.now() - 1000).toISOString();
    await store.runs.accept(delivered(run, ws, trigger, 'k'), () => 'refused');
    expect(await store.webhooks.delivery(trigger, 'k', before)).toEqual({ runId: run, httpStatus: 202 });
    expect(await store.webhooks.delivery(trigger, 'k', new Date(Date.now() + 60_000).toISOString())).toBeNull();
    expect(await store.webhooks.delivery(trigger, 'other', before)).toBeNull();
    expect(await store.webhooks.delivery(unique('trigger'), 'k', before)).toBeNull();
    expect(await store.webhooks.delivery(trigger, 'k\u0000', before)).toBeNull();
  });

  test('the trigger’s rate is counted in the accept: past the limit nothing is written (rate_limited); copies of one delivery count once; a new window counts again', async () => {
    const ws = workspace();
    const trigger = unique('rated');
    const rate = { window: 100, limit: 3 };
    const copy = (id: string) => delivered(id, ws, trigger, 'same', { rate });
    const first = unique('run');
    expect(await store.runs.accept(copy(first), () => 'refused')).toEqual({ status: 'queued', claimed: false });
    expect(await store.runs.accept(copy(unique('run')), () => 'refused')).toEqual({ status: 'repeated', runId: first, httpStatus: 202 });
    const distinct = Array.from({ length: 4 }, (_, i) => delivered(unique('run'), ws, trigger, `d${i}`, { rate }));
    const outcomes = [];
    for (const run of distinct) outcomes.push((await store.runs.accept(run, () => 'refused')).status);
    expect(outcomes).toEqual(['queued', 'queued', 'rate_limited', 'rate_limited']);
    // A limited delivery left no row and no run: sent again in the next window, it starts one.
    expect(await store.runs.find(distinct[2]!.id)).toBeNull();
    expect(await store.webhooks.delivery(trigger, 'd2', minuteAgo())).toBeNull();
    expect(await store.runs.accept({ ...distinct[2]!, rate: { window: 101, limit: 3 } }, () => 'refused')).toEqual({ status: 'queued', claimed: false });
    expect(await store.webhooks.delivery(trigger, 'd2', minuteAgo())).toEqual({ runId: distinct[2]!.id, httpStatus: 202 });
    expect(await store.workspaces.credits(ws, 0)).toBe(1000 - 4);
  });

  test('concurrent deliveries against one rate: exactly the limit are queued', async () => {
    const ws = workspace();
    const trigger = unique('rated');
    const rate = { window: 7, limit: 5 };
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, (_, i) => store.runs.accept(delivered(unique('run'), ws, trigger, `c${i}`, { rate }), () => 'refused')),
    );
    expect(outcomes.filter((o) => o.status === 'queued')).toHaveLength(5);
    expect(outcomes.filter((o) => o.status === 'rate_limited')).toHaveLength(7);
  });

  test('lastStartedBy: when each trigger last started a run (refusals do not count); triggers without runs are absent', async () => {
    const ws = workspace();
    const [t1, t2, none] = [unique('t1'), unique('t2'), unique('none')];
    const a = unique('run');
    const b = unique('run');
    await store.runs.accept(newRun(a, { workspaceId: ws, triggerId: t1, source: 'webhook' }), () => 'refused');
    await store.runs.accept(newRun(b, { workspaceId: ws, triggerId: t1, source: 'webhook' }), () => 'refused');
    await store.runs.accept(
      newRun(unique('run'), { workspaceId: workspace(), triggerId: t2, source: 'webhook', minimumCost: 5, initialCredits: 0 }),
      () => 'refused',
    );
    const found = await store.runs.lastStartedBy([t1, t2, none]);
    expect([...found.keys()]).toEqual([t1]);
    expect(found.get(t1)).toBe((await store.runs.find(b))!.accepted_at);
    expect((await store.runs.lastStartedBy([])).size).toBe(0);
  });
});

describe.each(adapters)('$name: deliveries’ retention', (adapter) => {
  const { store } = useStore(adapter);

  test('pruneDeliveries deletes at most `limit` deliveries received before the time; a pruned key starts a run again', async () => {
    const ws = workspace();
    const trigger = unique('trigger');
    const since = new Date(Date.now() - 60_000).toISOString();
    const runs = Array.from({ length: 3 }, (_, i) =>
      newRun(unique('run'), { workspaceId: ws, triggerId: trigger, source: 'webhook', delivery: { key: `d${i}`, since } }),
    );
    for (const run of runs) await store.runs.accept(run, () => 'refused');
    expect(await store.webhooks.pruneDeliveries('2000-01-01T00:00:00.000Z', 10)).toBe(0);
    const later = new Date(Date.now() + 60_000).toISOString();
    expect(await store.webhooks.pruneDeliveries(later, 2)).toBe(2);
    expect(await store.webhooks.pruneDeliveries(later, 2)).toBe(1);
    expect(await store.webhooks.pruneDeliveries(later, 2)).toBe(0);
    for (let i = 0; i < 3; i++) expect(await store.webhooks.delivery(trigger, `d${i}`, since)).toBeNull();
    expect(await store.runs.accept({ ...runs[0]!, id: unique('run') }, () => 'refused')).toEqual({ status: 'queued', claimed: false });
  });
});
