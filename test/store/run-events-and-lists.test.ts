// A run's events (numbered from 1 without gaps, read after a number, the final one last, at most
// RUN_EVENTS_LIMIT kept), the listeners told of them, the pages of a workspace's runs (filters,
// cursor, the items' members) and the retention of finished runs — each case on both adapters.
import pg from 'pg';
import { uuidV7 } from '../../src/ids';
import { adapters, pgRunListStatement, replicated, useStore, FINAL_EVENT, RUN_EVENTS_LIMIT, type RunListQuery } from './adapters';
import { eventTypes, lease, newRun, now, queue, range, running, sleep, unique, workspace } from './fixtures';

describe.each(adapters)('$name: run events', (adapter) => {
  const { store } = useStore(adapter);

  test('events are numbered 1..n per run; read after a number, at most `max`, oldest first; the last one named', async () => {
    const ws = workspace();
    const id = unique('run');
    await running(store, newRun(id, { workspaceId: ws }));
    for (let k = 0; k < 3; k++)
      await store.runs.saveState(id, () => ({
        state: { k },
        spent: 0,
        events: [
          { type: 'step', data: { k } },
          { type: 'tool', data: { k } },
        ],
      }));
    expect((await store.runs.events(id, 0, 100)).map((e) => e.seq)).toEqual(range(8));
    expect((await store.runs.events(id, 3, 2)).map((e) => [e.seq, e.type, JSON.parse(e.data)])).toEqual([
      [4, 'tool', { k: 0 }],
      [5, 'step', { k: 1 }],
    ]);
    expect(await store.runs.events(id, 8, 10)).toEqual([]);
    expect(await store.runs.lastEvent(id)).toEqual({ seq: 8, type: 'tool' });
    expect(await store.runs.finish(id, 'succeeded', null, {}, 0, now())).toBe(true);
    expect(await store.runs.lastEvent(id)).toEqual({ seq: 9, type: FINAL_EVENT });
    expect(await store.runs.events(unique('missing'), 0, 10)).toEqual([]);
  });

  test('concurrent writes of one run’s events are numbered without gaps; a cancel’s request is one event', async () => {
    const id = unique('busy');
    await running(store, newRun(id, { workspaceId: workspace() }));
    const save = (k: number) =>
      store.runs.saveState(id, () => ({
        state: { k },
        spent: 0,
        events: [
          { type: 'step', data: { k } },
          { type: 'tool', data: { k } },
        ],
      }));
    await Promise.all([...range(20).map(save), store.runs.cancel(id, 'user-2', now()), store.runs.cancel(id, 'user-3', now())]);
    await store.runs.finish(id, 'cancelled', null, {}, 0, now(), [{ type: 'last', data: {} }]);
    const n = 2 + 40 + 1 + 2;
    expect((await store.runs.events(id, 0, 1000)).map((e) => e.seq)).toEqual(range(n));
    const types = await eventTypes(store, id);
    expect(types.filter((t) => t === 'run.cancel_requested')).toHaveLength(1);
    expect(types.slice(-2)).toEqual(['last', FINAL_EVENT]);
  });

  test(`beyond ${RUN_EVENTS_LIMIT} events only the final one is kept, numbered next`, async () => {
    const id = unique('limited');
    await running(store, newRun(id, { workspaceId: workspace() }));
    const filler = range(RUN_EVENTS_LIMIT - 3).map((k) => ({ type: 'step', data: { k }, at: '2020-01-01T00:00:00.000Z' }));
    expect(await store.runs.saveState(id, () => ({ state: {}, spent: 0, events: filler }))).toBe('saved'); // events 3..limit-1
    expect(await store.runs.saveState(id, () => ({ state: {}, spent: 0, events: [{ type: 'step', data: { last: true } }] }))).toBe('saved'); // the limit-th
    expect(await store.runs.saveState(id, () => ({ state: {}, spent: 0, events: [{ type: 'step', data: { dropped: 1 } }] }))).toBe('saved'); // dropped
    expect(await store.runs.finish(id, 'failed', 'boom', {}, 0, now(), [{ type: 'step', data: { dropped: 2 } }])).toBe(true);
    const tail = await store.runs.events(id, RUN_EVENTS_LIMIT - 2, 100);
    expect(tail.map((e) => [e.seq, e.type, JSON.parse(e.data)])).toEqual([
      [RUN_EVENTS_LIMIT - 1, 'step', { k: RUN_EVENTS_LIMIT - 3 }],
      [RUN_EVENTS_LIMIT, 'step', { last: true }],
      [RUN_EVENTS_LIMIT + 1, FINAL_EVENT, { status: 'failed', error: 'boom' }],
    ]);
    expect(tail[0]!.at).toBe('2020-01-01T00:00:00.000Z');
    expect(await store.runs.lastEvent(id)).toEqual({ seq: RUN_EVENTS_LIMIT + 1, type: FINAL_EVENT });
  });

  test('an event written in one statement past the limit: the ones that fit, then only the final one', async () => {
    const id = unique('limited-at-once');
    await running(store, newRun(id, { workspaceId: workspace() }));
    const many = range(RUN_EVENTS_LIMIT).map((k) => ({ type: 'step', data: { k } }));
    expect(await store.runs.finish(id, 'succeeded', null, {}, 0, now(), many)).toBe(true);
    const events = await store.runs.events(id, 0, RUN_EVENTS_LIMIT + 10);
    expect(events).toHaveLength(RUN_EVENTS_LIMIT + 1);
    expect(events.map((e) => e.seq)).toEqual(range(RUN_EVENTS_LIMIT + 1));
    expect(events[RUN_EVENTS_LIMIT - 1]!.type).toBe('step');
    expect(events[RUN_EVENTS_LIMIT]!.type).toBe(FINAL_EVENT);
  });

  test('onEvents is told of a run once a write that added events to it committed', async () => {
    const heard: string[] = [];
    store.runs.onEvents((runId) => heard.push(runId));
    const id = unique('told');
    await queue(store, newRun(id, { workspaceId: workspace() }));
    expect(heard).toContain(id);
    await until(() => heard.includes(id));
    heard.length = 0;
    await store.runs.claim(id, lease('w'), 10);
    expect(heard).toContain(id);
    heard.length = 0;
    await store.runs.saveState(id, () => ({ state: {}, spent: 0, events: [{ type: 'step', data: {} }] }));
    await store.runs.finish(id, 'succeeded', null, {}, 0, now());
    expect(heard.filter((r) => r === id).length).toBeGreaterThanOrEqual(2);
    expect((await store.runs.events(id, 0, 10)).map((e) => e.type)).toEqual(['run.queued', 'run.started', 'step', FINAL_EVENT]);
  });
});

async function until(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('not heard in time');
    await sleep(10);
  }
}

describe.each(adapters)('$name: run lists', (adapter) => {
  const { store } = useStore(adapter);

  // Run ids are time-ordered (UUIDv7) in the service: here, increasing names.
  const seq = (prefix: string, i: number) => `${prefix}-${String(i).padStart(3, '0')}`;

  test('pages of a workspace’s runs of one kind, newest first by id, continued by the cursor; other users’ test runs hidden', async () => {
    const ws = workspace();
    const p = unique('list');
    const ids = range(25).map((i) => seq(p, i));
    for (const [i, id] of ids.entries()) {
      await queue(
        store,
        newRun(id, { workspaceId: ws, kind: 'agent', targetId: i % 2 ? 'agent-odd' : 'agent-even', agent: { slug: 'helper', name: 'Helper' } }),
      );
    }
    await queue(store, newRun(`${p}-x-other-user`, { workspaceId: ws, kind: 'agent', startedBy: 'user-2' }));
    await queue(store, newRun(`${p}-y-webhook`, { workspaceId: ws, kind: 'agent', startedBy: 'user-2', source: 'webhook', triggerId: 't' }));
    await queue(store, newRun(`${p}-z-workflow`, { workspaceId: ws, kind: 'workflow' }));
    await queue(store, newRun(`${p}-other-ws`, { workspaceId: workspace(), kind: 'agent' }));
    const page = (q: Partial<RunListQuery> = {}) => store.runs.list({ kind: 'agent', workspaceId: ws, userId: 'user-1', limit: 10, ...q });
    const seen: string[] = [];
    const sizes: number[] = [];
    for (let rows = await page(); rows.length; rows = await page({ beforeId: rows[rows.length - 1]!.id })) {
      seen.push(...rows.map((r) => r.id));
      sizes.push(rows.length);
    }
    expect(seen).toEqual([`${p}-y-webhook`, ...[...ids].reverse()]);
    expect(sizes).toEqual([10, 10, 6]);
    // user-2 sees their own test run and the webhook's, not user-1's test runs.
    expect((await page({ userId: 'user-2', limit: 100 })).map((r) => r.id)).toEqual([`${p}-y-webhook`, `${p}-x-other-user`]);
  });

  test('filters: target, statuses, source, accepted from/before', async () => {
    const ws = workspace();
    const p = unique('filter');
    const ids = range(12).map((i) => seq(p, i));
    for (const [i, id] of ids.entries()) {
      await queue(store, newRun(id, { workspaceId: ws, kind: 'agent', targetId: i % 2 ? 'agent-odd' : 'agent-even' }));
      if (i === 5) await sleep(5);
    }
    await queue(store, newRun(`${p}-webhook`, { workspaceId: ws, kind: 'agent', source: 'webhook', triggerId: 't' }));
    await store.runs.claim(ids[3]!, lease('w'), 100);
    await store.runs.finish(ids[3]!, 'succeeded', null, {}, 1, now());
    await store.runs.cancel(ids[4]!, 'user-1', now());
    const page = (q: Partial<RunListQuery>) => store.runs.list({ kind: 'agent', workspaceId: ws, userId: 'user-1', limit: 100, ...q });
    expect((await page({ targetId: 'agent-odd' })).map((r) => r.id)).toEqual(ids.filter((_, i) => i % 2).reverse());
    expect((await page({ statuses: ['succeeded'] })).map((r) => r.id)).toEqual([ids[3]]);
    expect((await page({ statuses: ['succeeded', 'cancelled'] })).map((r) => r.id)).toEqual([ids[4], ids[3]]);
    expect(await page({ statuses: ['queued'] })).toHaveLength(11);
    expect((await page({ source: 'webhook' })).map((r) => r.id)).toEqual([`${p}-webhook`]);
    expect(await page({ targetId: 'agent-even', statuses: ['succeeded'] })).toEqual([]);
    const accepted = await Promise.all(ids.map(async (id) => (await store.runs.find(id))!.accepted_at));
    const [from, before] = [accepted[2]!, accepted[9]!];
    const within = ids.filter((_, i) => accepted[i]! >= from && accepted[i]! < before);
    expect(within.length).toBeGreaterThan(0);
    expect(within.length).toBeLessThan(12);
    expect((await page({ acceptedFrom: from, acceptedBefore: before })).map((r) => r.id)).toEqual(within.reverse());
    expect(await page({ acceptedBefore: '2000-01-01T00:00:00.000Z' })).toEqual([]);
  });

  test('list items: the API’s members in its order (agent runs and workflow runs); a refusal’s credits are null', async () => {
    const ws = workspace();
    const p = unique('items');
    const agentRun = `${p}-a`;
    await running(store, newRun(agentRun, { workspaceId: ws, kind: 'agent', targetId: 'agent-1', agent: { slug: 'helper', name: 'Helper' } }));
    const at = '2030-01-01T00:00:00.000Z';
    await store.runs.finish(agentRun, 'succeeded', null, {}, 1, at);
    await store.runs.accept(newRun(`${p}-b-refused`, { workspaceId: ws, kind: 'agent', minimumCost: 5000 }), (b) => `only ${b}`);
    const rows = await store.runs.list({ kind: 'agent', workspaceId: ws, userId: 'user-1', limit: 10 });
    const [refused, ended] = rows.map((r) => JSON.parse(r.item));
    const run = (await store.runs.find(agentRun))!;
    expect(Object.keys(ended)).toEqual(['id', 'agent', 'status', 'source', 'trigger_id', 'credits', 'error', 'started_at', 'run_started_at', 'finished_at']);
    expect(ended).toEqual({
      id: agentRun,
      agent: { slug: 'helper', name: 'Helper' },
      status: 'succeeded',
      source: 'test',
      trigger_id: null,
      credits: 1,
      error: null,
      started_at: run.accepted_at,
      run_started_at: run.started_at,
      finished_at: at,
    });
    expect(refused).toMatchObject({ id: `${p}-b-refused`, agent: null, status: 'refused', credits: null, error: 'only 999', run_started_at: null });
    await queue(store, newRun(`${p}-c-wf`, { workspaceId: ws, kind: 'workflow', targetId: 'wf-9', targetVersion: 3, source: 'schedule', triggerId: 'sched' }));
    const [workflowRow] = await store.runs.list({ kind: 'workflow', workspaceId: ws, userId: 'user-1', limit: 5 });
    const item = JSON.parse(workflowRow!.item);
    expect(Object.keys(item)).toEqual([
      'id',
      'workflow_id',
      'workflow_version_id',
      'status',
      'source',
      'trigger_id',
      'credits',
      'error',
      'accepted_at',
      'started_at',
      'finished_at',
    ]);
    expect(item).toEqual({
      id: `${p}-c-wf`,
      workflow_id: 'wf-9',
      workflow_version_id: 'wf-9@3',
      status: 'queued',
      source: 'schedule',
      trigger_id: 'sched',
      credits: 0,
      error: null,
      accepted_at: (await store.runs.find(`${p}-c-wf`))!.accepted_at,
      started_at: null,
      finished_at: null,
    });
  });

  test('a limit that is not a whole number of at least 1 rejects (RangeError)', async () => {
    const ws = workspace();
    for (const limit of [0, -1, 1.5, Number.NaN]) {
      await expect(store.runs.list({ kind: 'agent', workspaceId: ws, userId: 'u', limit })).rejects.toThrow(RangeError);
    }
    expect(await store.runs.list({ kind: 'agent', workspaceId: ws, userId: 'u', limit: 1 })).toEqual([]);
  });
});

// A workspace's page must not cost more because other workspaces ran more, or more lately: its
// plan reads the page's own index entries, whatever the statistics say (migrations/004).
describe.each(replicated)('$name only: a run list’s plan', (adapter) => {
  const { opened } = useStore(adapter);

  test('the first page of a workspace whose runs are all older than 3,000 runs of another reads its own entries only, planned for its values or not', async () => {
    const raw = new pg.Client({ connectionString: opened.url as string });
    await raw.connect();
    try {
      const [mine, theirs] = [workspace(), workspace()];
      const insert = (ws: string, ids: string[]) =>
        raw.query(
          `INSERT INTO runs (id, kind, workspace_id, started_by, target_id, target_version, status, source, request, snapshot, state, credits_reserved, credits_spent, accepted_at)
           SELECT id, 'agent', $2, 'u', 't', 1, 'succeeded', 'webhook', '{}', '{}', '{}', 1, 1, '2026-01-01T00:00:00.000Z' FROM unnest($1::text[]) AS t (id)`,
          [ids, ws],
        );
      const day = Date.now() - 86_400_000;
      await insert(
        mine,
        range(600).map((i) => uuidV7(day + i)),
      );
      await insert(
        theirs,
        range(3000).map((i) => uuidV7(Date.now() + i)),
      );
      await raw.query('ANALYZE runs');
      const { text, values } = pgRunListStatement({ workspaceId: mine, kind: 'agent', userId: 'u', limit: 21 });
      // The plan for these values, and the generic plan every session of the adapter uses
      // (plan_cache_mode: database.ts).
      await raw.query(`PREPARE listed AS ${text}`);
      await raw.query('SET plan_cache_mode = force_generic_plan');
      const args = values.map((v) => raw.escapeLiteral(String(v))).join(', ');
      for (const [explained, params] of [
        [`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values],
        [`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE listed(${args})`, []],
      ] as const) {
        const plan = JSON.stringify((await raw.query(explained, [...params])).rows[0]['QUERY PLAN']);
        expect(plan).toContain('"Index Name":"runs_listed"');
        const removed = [...plan.matchAll(/"Rows Removed by Filter":(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
        expect(removed).toBeLessThan(21);
      }
    } finally {
      await raw.end();
    }
  });
});

describe.each(adapters)('$name: retention of finished runs', (adapter) => {
  const { store } = useStore(adapter);

  test('pruneFinished deletes up to `batch` runs that finished before the time, with their events and approvals; others stay', async () => {
    const ws = workspace();
    const [ended, expired, live, recent] = [unique('ended'), unique('expired'), unique('live'), unique('recent')];
    for (const id of [ended, expired, live, recent]) await running(store, newRun(id, { workspaceId: ws, kind: 'agent' }));
    await store.runs.park(expired, { state: {}, spent: 0, calls: [{ id: 'c', tool: 't' }], expiresAt: '2000-01-01T00:00:00.000Z', events: [] }, now());
    expect(await store.runs.expireApprovals('expired', '2000-01-02T00:00:00.000Z')).toBe(1);
    expect(await store.runs.finish(ended, 'succeeded', null, {}, 0, '2000-01-01T00:00:00.000Z')).toBe(true);
    expect(await store.runs.finish(recent, 'succeeded', null, {}, 0, now())).toBe(true);
    expect(await store.runs.find(expired)).toMatchObject({ status: 'failed', finished_at: '2000-01-02T00:00:00.000Z' });
    expect(await store.runs.pruneFinished('2000-01-01T00:00:00.000Z', 10)).toBe(0); // before, not at
    expect(await store.runs.pruneFinished('2001-01-01T00:00:00.000Z', 1)).toBe(1);
    expect(await store.runs.find(ended)).toBeNull(); // the oldest end first
    expect(await store.runs.find(expired)).not.toBeNull();
    expect(await store.runs.pruneFinished('2001-01-01T00:00:00.000Z', 1)).toBe(1);
    expect(await store.runs.pruneFinished('2001-01-01T00:00:00.000Z', 10)).toBe(0);
    for (const id of [ended, expired]) {
      expect(await store.runs.find(id)).toBeNull();
      expect(await store.runs.events(id, 0, 10)).toEqual([]);
      expect(await store.runs.lastEvent(id)).toBeNull();
      expect(await store.runs.decide(id, 'c', 'approve', null, 'u', now())).toEqual({ outcome: 'no_call' });
    }
    expect(await store.runs.find(live)).toMatchObject({ status: 'running' });
    expect(await store.runs.find(recent)).toMatchObject({ status: 'succeeded' });
    expect((await store.runs.list({ kind: 'agent', workspaceId: ws, userId: 'user-1', limit: 10 })).map((r) => r.id).sort()).toEqual([live, recent].sort());
  });
});
