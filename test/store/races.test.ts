// Races between two stores on one database: replicas on PostgreSQL; on SQLite two connections to
// the file (which production never runs — the serve lock — but whose conditional writes decide the
// same races, each transaction whole). Outcomes are read back through a store opened after the
// race (a SQLite store's caches are its own). Then the PostgreSQL-only cases: notifications between
// replicas, and reads that must see another replica's writes at once.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { adapters, FINAL_EVENT, openPgDatabase, replicated, type OpenedStore, type ScheduledFire, type Store } from './adapters';
import {
  agent,
  createAgent,
  emptyQueue,
  eventTypes,
  lease,
  newRun,
  now,
  ok,
  opts,
  poll,
  queue,
  range,
  running,
  sleep,
  unique,
  until,
  workflow,
  workspace,
} from './fixtures';
import { CREATOR, WRITER } from './fixtures';

/** The deadlocks PostgreSQL has detected in the database at `url`. */
async function deadlocksIn(url: string): Promise<number> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return Number((await client.query('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()')).rows[0].deadlocks);
  } finally {
    await client.end();
  }
}

describe.each(adapters)('$name: two stores on one database', (adapter) => {
  let opened: OpenedStore;
  let A: Store;
  let B: Store;
  /** A or B by turn, so that concurrent calls are spread over both. */
  const either = (i: number) => (i % 2 === 0 ? A : B);
  /** A store opened now: what the database holds after the race. */
  const fresh = () => opened.another();
  beforeAll(async () => {
    opened = await adapter.open();
    A = opened.store;
    B = await opened.another();
  });
  afterAll(() => opened?.close());

  test('compare-and-set: of concurrent replaces with one stamp from both stores, exactly one wins', async () => {
    const ws = workspace();
    const doc = agent('contested');
    const record = await createAgent(A, ws, doc);
    const outcomes = await Promise.all(
      range(20).map((i) => either(i).agents.replace(ws, doc.id, record.stampMicros, { ...record.document, name: `writer ${i}` }, [], WRITER)),
    );
    const winners = outcomes.filter((o) => o.ok);
    expect(winners).toHaveLength(1);
    const stored = (await (await fresh()).agents.find(ws, doc.id))!;
    expect(stored.version).toBe(2);
    expect(stored.document.name).toBe(winners[0]!.ok && winners[0]!.record.document.name);
    for (const o of outcomes) if (!o.ok) expect(o.current).toMatchObject({ version: 2, stampMicros: stored.stampMicros });
  });

  test('creates from both stores: one per slug, exactly the limit, derived slugs distinct', async () => {
    const ws = workspace();
    const same = await Promise.all(
      range(10).map((i) => {
        const doc = agent('same');
        return either(i).agents.create(ws, doc.id, doc, opts(), [], CREATOR);
      }),
    );
    expect(same.filter((o) => o.ok)).toHaveLength(1);
    expect(same.filter((o) => !o.ok && o.reason === 'slug_taken')).toHaveLength(9);
    const limited = workspace();
    const outcomes = await Promise.all(
      range(12).map((i) => {
        const doc = agent(`limited-${i}`);
        return either(i).agents.create(limited, doc.id, doc, opts(5), [], CREATOR);
      }),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(5);
    expect(JSON.parse((await (await fresh()).agents.list(limited)).json)).toHaveLength(5);
    const derived = await Promise.all(
      range(8).map((i) => {
        const doc = agent('helper');
        return either(i).agents.create(ws, doc.id, doc, opts(100, true), [], CREATOR);
      }),
    );
    expect(new Set(derived.map((o) => (o.ok ? o.record.slug : 'failed')))).toEqual(new Set(['helper', ...range(7).map((i) => `helper-${i + 1}`)]));
  });

  test('a schedule’s due time is claimed exactly once, whether by advances or by the runs it starts', async () => {
    const ws = workspace();
    const pollId = unique('poll');
    const doc = agent('raced-schedule', {
      status: 'active',
      triggers: [poll(pollId)],
      schedule: { cron: '* * * * *', timezone: 'UTC', enabled: true } as never,
    });
    await createAgent(A, ws, doc);
    const id = `poll:${pollId}`;
    const due = (await A.schedules.find(id))!.next_due_at as number;
    const claims = await Promise.all(
      range(10).map((i) => either(i).schedules.advance({ id, expectedDue: due, next: due + 60_000, fires: [{ dueAt: due, outcome: 'polling' }] })),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await (await fresh()).schedules.fires(id)).toEqual([{ due_at: due, outcome: 'polling', run_id: null, detail: null }]);
    const own = `agent:${doc.id}`;
    const ownDue = (await A.schedules.find(own))!.next_due_at as number;
    const fire: ScheduledFire = { kind: 'schedule', claim: { id: own, expectedDue: ownDue, next: ownDue + 60_000, fires: [] }, dueAt: ownDue };
    const ids = range(6).map(() => unique('fire'));
    const outcomes = await Promise.all(
      ids.map((runId, i) =>
        either(i).runs.accept(newRun(runId, { workspaceId: ws, kind: 'agent', targetId: doc.id, source: 'schedule', fire }), () => 'refused'),
      ),
    );
    expect(outcomes.map((o) => o.status).sort()).toEqual(['queued', 'raced', 'raced', 'raced', 'raced', 'raced']);
    const winner = ids[outcomes.findIndex((o) => o.status === 'queued')]!;
    const after = await fresh();
    expect(await after.schedules.fires(own)).toEqual([{ due_at: ownDue, outcome: 'fired', run_id: winner, detail: null }]);
    for (const runId of ids) expect((await after.runs.find(runId))?.id ?? null).toBe(runId === winner ? winner : null);
  });

  test('credits never go below zero under concurrent acceptances and reservations on both stores, and no write deadlocks', async () => {
    // Its own database, so that PostgreSQL's count of deadlocks there is this race's alone.
    const own = await adapter.open();
    try {
      const [C, D] = [own.store, await own.another()];
      const mine = (i: number) => (i % 2 === 0 ? C : D);
      const ws = workspace();
      const outcomes = await Promise.all(
        range(30).map((i) => mine(i).runs.accept(newRun(unique('credit'), { workspaceId: ws, minimumCost: 1, initialCredits: 20 }), () => 'refused')),
      );
      expect(outcomes.filter((o) => o.status === 'queued')).toHaveLength(20);
      expect(await (await own.another()).workspaces.credits(ws, 0)).toBe(0);
      const other = workspace();
      const ids = range(6).map(() => unique('more'));
      for (const [i, id] of ids.entries()) await running(mine(i), newRun(id, { workspaceId: other, minimumCost: 2, initialCredits: 20 }));
      const more = await Promise.all(ids.flatMap((id, i) => range(4).map((k) => mine(i + k).runs.reserveMore(id, 1))));
      expect(more.filter(Boolean)).toHaveLength(8);
      const after = await own.another();
      expect(await after.workspaces.credits(other, 0)).toBe(0);
      const reserved = await Promise.all(ids.map(async (id) => (await after.runs.find(id))!.credits_reserved));
      expect(reserved.reduce((a, b) => a + b, 0)).toBe(20);
      // A deadlock is run again, so the outcomes hide it; PostgreSQL counts it. A backend reports its
      // counts when it exits: the racing stores are closed first. (A slot debit that falls short in a
      // transaction once deadlocked here dozens of times a race, each detected after deadlock_timeout.)
      if (own.url) {
        await Promise.all([C.close(), D.close()]);
        await sleep(1000);
        expect(await deadlocksIn(own.url)).toBe(0);
      }
    } finally {
      await own.close();
    }
  });

  test('a queued run is claimed by one store only: claimers on both take each run once; a claim by id and claimNext never both win', async () => {
    await emptyQueue(A);
    const ws = [workspace(), workspace()];
    const ids = range(60).map((i) => `${unique('q')}-${i}`);
    for (const [i, id] of ids.entries()) await queue(either(i), newRun(id, { workspaceId: ws[i % 2]! }));
    const claimed: string[] = [];
    const claimer = async (s: Store, owner: string) => {
      for (let row = await s.runs.claimNext(lease(owner), 1000); row; row = await s.runs.claimNext(lease(owner), 1000)) claimed.push(row.id);
    };
    await Promise.all([...range(4).map((i) => claimer(A, `a-${i}`)), ...range(4).map((i) => claimer(B, `b-${i}`))]);
    expect([...claimed].sort()).toEqual([...ids].sort());
    const after = await fresh();
    for (const id of ids.slice(0, 10)) expect(await eventTypes(after, id)).toEqual(['run.queued', 'run.started']);
    const byIdRuns = range(20).map(() => unique('by-id'));
    for (const id of byIdRuns) await queue(A, newRun(id, { workspaceId: workspace() }));
    const results = await Promise.all(
      byIdRuns.map(async (id) => [await A.runs.claim(id, lease('a'), 1000), await B.runs.claimNext(lease('b'), 1000)] as const),
    );
    const byId = byIdRuns.filter((_, i) => results[i]![0]);
    const byNext = results.map(([, row]) => row?.id).filter((id): id is string => !!id);
    expect(byId.filter((id) => byNext.includes(id))).toEqual([]);
    expect(new Set([...byId, ...byNext])).toEqual(new Set(byIdRuns));
  });

  test('an expired lease is taken over by the other store (the run failed, refunded once); the first worker’s later writes do not land', async () => {
    const ws = workspace();
    const ids = range(10).map(() => unique('lease'));
    for (const id of ids) {
      await queue(A, newRun(id, { workspaceId: ws, minimumCost: 4, initialCredits: 100 }));
      expect(await A.runs.claim(id, lease('a-dying', 50), 100)).toBe(true);
    }
    await sleep(150);
    const [finished, recovered] = await Promise.all([
      Promise.all(ids.map((id) => A.runs.finish(id, 'succeeded', null, { done: true }, 1, now()))),
      Promise.all(range(3).map(() => B.runs.recoverAbandoned('abandoned'))),
    ]);
    expect(finished.filter(Boolean).length + recovered.reduce((a, b) => a + b, 0)).toBe(10);
    const after = await fresh();
    for (const [i, id] of ids.entries()) {
      expect((await after.runs.find(id))!.status).toBe(finished[i] ? 'succeeded' : 'failed');
      expect((await eventTypes(after, id)).filter((t) => t === FINAL_EVENT)).toHaveLength(1);
      expect(await A.runs.renewLeases(lease('a-dying'), [id])).toEqual([]);
      expect(await A.runs.saveState(id, () => ({ state: {}, spent: 4 }))).toBe('not_running');
    }
    expect(await after.workspaces.credits(ws, 0)).toBe(100 - finished.filter(Boolean).length);
  });

  test('deliveries of one key, decisions of one call, idempotency keys and cancels raced across both stores: one outcome each', async () => {
    const ws = workspace();
    const trigger = unique('trigger');
    const since = new Date(Date.now() - 60_000).toISOString();
    const deliveries = range(8).map(() => unique('delivery'));
    const outcomes = await Promise.all(
      deliveries.map((id, i) =>
        either(i).runs.accept(newRun(id, { workspaceId: ws, source: 'webhook', triggerId: trigger, delivery: { key: 'msg', since } }), () => 'refused'),
      ),
    );
    expect(outcomes.filter((o) => o.status === 'queued')).toHaveLength(1);
    const winner = deliveries[outcomes.findIndex((o) => o.status === 'queued')]!;
    for (const o of outcomes) if (o.status !== 'queued') expect(o).toEqual({ status: 'repeated', runId: winner, httpStatus: 202 });

    const parked = unique('parked');
    await running(A, newRun(parked, { workspaceId: ws, kind: 'agent' }));
    expect(
      await A.runs.park(
        parked,
        {
          state: { tool_calls: [{ id: 'c', status: 'awaiting_approval' }] },
          spent: 0,
          calls: [{ id: 'c', tool: 't' }],
          expiresAt: '2099-01-01T00:00:00.000Z',
          events: [],
        },
        now(),
      ),
    ).toBe('parked');
    const decisions = await Promise.all([
      A.runs.decide(parked, 'c', 'approve', null, 'user-a', now()),
      B.runs.decide(parked, 'c', 'reject', null, 'user-b', now()),
    ]);
    expect(decisions.map((d) => d.outcome).sort()).toEqual(['decided_before', 'resumed']);

    const key = { workspaceId: ws, userId: 'u', operation: 'op', key: 'k' };
    const begins = await Promise.all(
      range(8).map((i) => either(i).idempotency.begin(key, `fp-${i}`, now(), '2030-01-01T00:00:00.000Z', '2000-01-01T00:00:00.000Z')),
    );
    expect(begins.filter((b) => b.outcome === 'claimed')).toHaveLength(1);

    const cancelled = range(8).map(() => unique('cancel'));
    for (const id of cancelled) await queue(A, newRun(id, { workspaceId: ws }));
    const [cancels, claims] = await Promise.all([
      Promise.all(cancelled.map((id) => B.runs.cancel(id, 'user-2', now()))),
      Promise.all(cancelled.map((id) => A.runs.claim(id, lease('a'), 1000))),
    ]);
    const after = await fresh();
    for (const [i, id] of cancelled.entries()) {
      expect(cancels[i]).toEqual(claims[i] ? { outcome: 'requested' } : { outcome: 'cancelled' });
      expect((await after.runs.find(id))!.status).toBe(claims[i] ? 'running' : 'cancelled');
    }
  });

  test('the trigger’s rate counted exactly across both stores; a workspace’s initial credits given once, whichever asks first', async () => {
    const ws = workspace();
    const trigger = unique('rated');
    const since = new Date(Date.now() - 60_000).toISOString();
    const rate = { window: 100, limit: 7 };
    const outcomes = await Promise.all(
      range(20).map((i) =>
        either(i).runs.accept(newRun(unique('rated'), { workspaceId: ws, triggerId: trigger, delivery: { key: `d${i}`, since }, rate }), () => 'refused'),
      ),
    );
    expect(outcomes.filter((o) => o.status === 'queued')).toHaveLength(7);
    expect(outcomes.filter((o) => o.status === 'rate_limited')).toHaveLength(13);
    const fresh_ = workspace();
    const first = await Promise.all(range(10).map((i) => either(i).workspaces.credits(fresh_, 1000 + i)));
    expect(new Set(first).size).toBe(1);
  });
});

/**
 * Another writer: a raw transaction does `hold` (taking its row locks), `write` starts meanwhile and
 * waits for them; 150 ms later the transaction does `beforeCommit` and commits. `write`'s outcome.
 */
async function whileRawTransaction<T>(
  raw: pg.Client,
  hold: () => Promise<unknown>,
  write: () => Promise<T>,
  beforeCommit: () => Promise<unknown> = async () => undefined,
): Promise<T> {
  await raw.query('BEGIN');
  await hold();
  const pending = write();
  await sleep(150);
  await beforeCommit();
  await raw.query('COMMIT');
  return pending;
}

describe.each(replicated)('$name only: replicas', (adapter) => {
  let opened: OpenedStore;
  let A: Store;
  let B: Store;
  beforeAll(async () => {
    opened = await adapter.open();
    A = opened.store;
    B = await opened.another();
  });
  afterAll(() => opened?.close());

  test('a replica reads another’s document writes at once: a replace, a delete and a new document under the slug', async () => {
    const ws = workspace();
    const id = randomUUID();
    const first = await ok(A.workflows.create(ws, id, workflow('held'), { limit: 10 }, CREATOR));
    expect(await B.workflows.find(ws, 'held')).toMatchObject({ version: 1, stampMicros: first.stampMicros });
    await ok(A.workflows.replace(ws, id, first.stampMicros, { ...first.document, name: 'Changed on A' }, WRITER));
    for (const ref of ['held', id]) expect(await B.workflows.find(ws, ref)).toMatchObject({ version: 2, document: { name: 'Changed on A' } });
    expect(JSON.parse((await B.workflows.list(ws)).json)[0]).toMatchObject({ name: 'Changed on A', version: 2 });
    expect(await A.workflows.remove(ws, id)).toBe(true);
    expect(await B.workflows.find(ws, id)).toBeNull();
    const again = randomUUID();
    await ok(A.workflows.create(ws, again, workflow('held'), { limit: 10 }, CREATOR));
    expect(await B.workflows.find(ws, 'held')).toMatchObject({ id: again, version: 1 });
    // Runs and kv too: nothing is answered from a replica's memory.
    const run = unique('run');
    await queue(A, newRun(run, { workspaceId: ws }));
    await B.runs.claim(run, lease('b'), 10);
    expect(await A.runs.find(run)).toMatchObject({ status: 'running' });
    await B.kv.set(ws, 'k', 1);
    expect(await A.kv.get(ws, 'k')).toBe(1);
  });

  // Each of a replica's held versions (documents by id and slug, lists, trigger status versions) is
  // answered only after the database confirmed it: every read made after another replica's write
  // returned sees that write, however many reads of the same entries are in flight with it.
  test('held documents and lists: many concurrent reads on one replica, each begun after the other’s write, see that write', async () => {
    const ws = workspace();
    const docs = await Promise.all(range(4).map((i) => ok(A.agents.create(ws, randomUUID(), agent(`held-${i}`), opts(), [], CREATOR))));
    const flow = await ok(A.workflows.create(ws, randomUUID(), workflow('held-flow'), { limit: 10 }, CREATOR));
    const latest = [...docs];
    for (let round = 1; round <= 5; round++) {
      // B holds every entry, with reads still in flight while A writes.
      const inFlight = Promise.all([...docs.map((d) => B.agents.find(ws, d.slug)), B.agents.list(ws), B.workflows.list(ws)]);
      const target = round % docs.length;
      const written = await ok(
        A.agents.replace(ws, latest[target]!.id, latest[target]!.stampMicros, { ...latest[target]!.document, name: `Round ${round}` }, [], WRITER),
      );
      latest[target] = written;
      await inFlight;
      const reads = await Promise.all(range(20).map((i) => (i % 3 === 0 ? B.agents.list(ws) : B.agents.find(ws, i % 2 ? written.id : written.slug))));
      for (const read of reads) {
        if (read === null) throw new Error(`round ${round}: a read found nothing`);
        if (!('stampMicros' in read)) expect(JSON.parse(read.json)).toContainEqual(expect.objectContaining({ id: written.id, name: `Round ${round}` }));
        else expect(read).toMatchObject({ id: written.id, stampMicros: written.stampMicros, document: { name: `Round ${round}` } });
      }
    }
    // A new document, then a workflow's replace and delete: B's held lists follow each.
    const added = await ok(A.agents.create(ws, randomUUID(), agent('held-added'), opts(), [], CREATOR));
    expect(JSON.parse((await B.agents.list(ws)).json).map((i: { slug: string }) => i.slug)).toContain(added.slug);
    await ok(A.workflows.replace(ws, flow.id, flow.stampMicros, { ...flow.document, name: 'Renamed on A' }, WRITER));
    expect(JSON.parse((await B.workflows.list(ws)).json)).toEqual([expect.objectContaining({ name: 'Renamed on A', version: 2 })]);
    expect(await A.workflows.remove(ws, flow.id)).toBe(true);
    expect(JSON.parse((await B.workflows.list(ws)).json)).toEqual([]);
    expect(await B.workflows.find(ws, 'held-flow')).toBeNull();
  });

  test('held trigger status versions: a run a trigger starts on one replica moves the version the other reads next', async () => {
    const ws = workspace();
    const doc = agent('status-held', { status: 'active' });
    await createAgent(A, ws, doc);
    for (let i = 0; i < 3; i++) {
      const before = await Promise.all(range(5).map(() => B.schedules.statusVersion(doc.id)));
      const outcome = await A.runs.accept(
        newRun(unique('run'), { workspaceId: ws, kind: 'agent', targetId: doc.id, source: 'webhook', triggerId: unique('t') }),
        () => 'refused',
      );
      expect(outcome).toEqual({ status: 'queued', claimed: false });
      const after = await Promise.all(range(5).map(() => B.schedules.statusVersion(doc.id)));
      for (const v of after) expect(v).toBeGreaterThan(before[0]!);
    }
  });

  // A claim and a run's end are one statement each, numbering their events from the snapshot it
  // began with: when it waited for another writer of the run, that writer's events are not in it,
  // and the statement is sent again (see withEventsAppended). Here the other writer holds the run
  // while the statement starts, then appends an event and commits.
  test('an end or a claim that waited for another writer of the run numbers its events after that writer’s', async () => {
    const raw = new pg.Client({ connectionString: opened.url as string });
    await raw.connect();
    const whileHeld = (runId: string, write: () => Promise<unknown>) =>
      whileRawTransaction(
        raw,
        () => raw.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [runId]),
        write,
        () =>
          raw.query(
            `INSERT INTO run_events (run_id, seq, type, data, at) SELECT $1, COALESCE(MAX(seq), 0) + 1, 'run.note', '{}', $2 FROM run_events WHERE run_id = $1`,
            [runId, now()],
          ),
      );
    try {
      const ws = workspace();
      const run = unique('run');
      await queue(A, newRun(run, { workspaceId: ws }));
      expect(await whileHeld(run, () => B.runs.claim(run, lease('b'), 10))).toBe(true);
      expect(await whileHeld(run, () => B.runs.finish(run, 'succeeded', null, {}, 0, now()))).toBe(true);
      const events = await A.runs.events(run, 0, 100);
      expect(events.map((e) => e.type)).toEqual(['run.queued', 'run.note', 'run.started', 'run.note', FINAL_EVENT]);
      expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(await A.runs.find(run)).toMatchObject({ status: 'succeeded' });
    } finally {
      await raw.end();
    }
  });

  test('a document write that waited for a scheduler holding its schedule: a removed schedule’s fires go with it, a kept one keeps the due time that scheduler set', async () => {
    const raw = new pg.Client({ connectionString: opened.url as string });
    await raw.connect();
    /** Another replica's scheduler: it advances the schedule and records a fire, committed while `write` waits for the row. */
    const whileAdvancing = (scheduleId: string, write: () => Promise<unknown>) =>
      whileRawTransaction(
        raw,
        async () => {
          await raw.query('UPDATE schedules SET next_due_at = 4102444800000 WHERE id = $1', [scheduleId]);
          await raw.query(`INSERT INTO schedule_fires (schedule_id, due_at, outcome, recorded_at) VALUES ($1, 1, 'fired', $2)`, [scheduleId, now()]);
        },
        write,
      );
    try {
      const ws = workspace();
      const [gone, kept] = [unique('poll'), unique('poll')];
      const record = await createAgent(A, ws, agent('polled', { status: 'active', triggers: [poll(gone), poll(kept)] }));
      const replaced = await whileAdvancing(`poll:${gone}`, () =>
        B.agents.replace(ws, record.id, record.stampMicros, { ...record.document, triggers: [poll(kept)] }, [], WRITER),
      );
      expect(replaced).toMatchObject({ ok: true });
      expect((await raw.query('SELECT COUNT(*)::int AS n FROM schedule_fires WHERE schedule_id = $1', [`poll:${gone}`])).rows[0].n).toBe(0);
      expect(await A.schedules.find(`poll:${gone}`)).toBeNull();
      const current = (replaced as { record: typeof record }).record;
      await whileAdvancing(`poll:${kept}`, () => B.agents.replace(ws, record.id, current.stampMicros, { ...current.document, name: 'renamed' }, [], WRITER));
      expect(await A.schedules.find(`poll:${kept}`)).toMatchObject({ next_due_at: 4102444800000, active: 1 });
    } finally {
      await raw.end();
    }
  });

  test('sessions: the API’s writes and reads wait for the WAL flush, the run workers’ own writes (visible) do not; all plan a statement once', async () => {
    // The test cluster turns synchronous commits off for speed (scripts/pg-cluster.js): this database's sessions start with them on, as a deployment's do.
    const admin = new pg.Client({ connectionString: opened.url as string });
    await admin.connect();
    await admin.query(`ALTER DATABASE "${(await admin.query('SELECT current_database() AS name')).rows[0].name}" SET synchronous_commit = on`);
    await admin.end();
    const db = openPgDatabase(opened.url as string, { max: 2 });
    try {
      const setting = async (read: Promise<{ synchronous_commit: string } | undefined>) => (await read)?.synchronous_commit;
      expect(await setting(db.row('SHOW synchronous_commit'))).toBe('on');
      expect(await setting(db.transaction((sql) => sql.row('SHOW synchronous_commit')))).toBe('on');
      expect(await setting(db.visible.row('SHOW synchronous_commit'))).toBe('off');
      expect(await setting(db.transaction((sql) => sql.row('SHOW synchronous_commit'), { ack: 'visible' }))).toBe('off');
      // Every session plans a named statement once, for any values (see database.ts).
      const plans = async (read: Promise<{ plan_cache_mode: string } | undefined>) => (await read)?.plan_cache_mode;
      expect(await plans(db.row('SHOW plan_cache_mode'))).toBe('force_generic_plan');
      expect(await plans(db.visible.row('SHOW plan_cache_mode'))).toBe('force_generic_plan');
      expect(await plans(db.transaction((sql) => sql.row('SHOW plan_cache_mode'), { ack: 'visible' }))).toBe('force_generic_plan');
    } finally {
      await db.close();
    }
  });

  test('an accept on one replica wakes the other’s onQueued; an event write wakes the other’s onEvents (its own once)', async () => {
    let [queuedA, queuedB] = [0, 0];
    const [eventsA, eventsB]: [string[], string[]] = [[], []];
    A.runs.onQueued(() => queuedA++);
    B.runs.onQueued(() => queuedB++);
    A.runs.onEvents((id) => eventsA.push(id));
    B.runs.onEvents((id) => eventsB.push(id));
    await sleep(200); // a "look again" of a listener still connecting is heard before the accept
    [queuedA, queuedB] = [0, 0];
    const id = unique('notified');
    await queue(A, newRun(id, { workspaceId: workspace() }));
    await until(() => queuedB > 0, 2000);
    await sleep(100);
    expect(queuedA).toBe(0); // its own accept: the local runner is handed the run
    eventsA.length = 0;
    eventsB.length = 0;
    await A.runs.claim(id, lease('a'), 10);
    expect(eventsA).toEqual([id]); // at once, when the write committed
    await until(() => eventsB.includes(id), 2000);
    await sleep(100);
    expect(eventsA).toEqual([id]);
    expect(eventsB).toEqual([id]);
    // A decision that queues a run again wakes the other replica too.
    await A.runs.park(id, { state: {}, spent: 0, calls: [{ id: 'c', tool: 't' }], expiresAt: '2099-01-01T00:00:00.000Z', events: [] }, now());
    queuedB = 0;
    expect(await A.runs.decide(id, 'c', 'approve', null, 'u', now())).toEqual({ outcome: 'resumed' });
    await until(() => queuedB > 0, 2000);
  });

  test('a run the acceptance claims for a worker of its replica (claim) wakes no other replica, nor one it offered a worker and left queued at its cap; a run offered none does', async () => {
    let queuedB = 0;
    B.runs.onQueued(() => queuedB++);
    await sleep(200); // a "look again" of a listener still connecting is heard before the accepts
    queuedB = 0;
    const ws = workspace();
    const claim = { lease: lease('a'), cap: 1 };
    expect(await A.runs.accept({ ...newRun(unique('claimed'), { workspaceId: ws }), claim }, () => 'refused')).toEqual({ status: 'queued', claimed: true });
    expect(await A.runs.accept({ ...newRun(unique('at-cap'), { workspaceId: ws }), claim }, () => 'refused')).toEqual({ status: 'queued', claimed: false });
    await sleep(300);
    expect(queuedB).toBe(0);
    await queue(A, newRun(unique('for-anyone'), { workspaceId: ws }));
    await until(() => queuedB > 0, 2000); // the same path heard: the silence above was the claim's
  });

  test('a dropped listening connection reconnects, says "look again", and hears again', async () => {
    let [queuedA, queuedB] = [0, 0];
    A.runs.onQueued(() => queuedA++);
    B.runs.onQueued(() => queuedB++);
    const admin = new pg.Client({ connectionString: opened.url! });
    await admin.connect();
    try {
      const { rowCount } = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'build-api-listener' AND datname = current_database()`,
      );
      expect(rowCount).toBeGreaterThanOrEqual(2);
    } finally {
      await admin.end();
    }
    await until(() => queuedA > 0 && queuedB > 0, 10_000); // the "look again" after reconnecting
    const before = queuedB;
    await queue(A, newRun(unique('after-reconnect'), { workspaceId: workspace() }));
    await until(() => queuedB > before, 2000);
  });
});
