// The evals in the store, on both adapters: a create takes its reservation from the workspace's
// balance or writes nothing; find and list read an eval in its workspace only, the list newest first
// by its keyset; of two stores claiming at once each eval goes to one, and a lease that ran out can
// be claimed again; every write that moves an eval on is refused once its lease is lost, a row's run
// is recorded once, the held credits move back to the balance as the eval goes and at its end;
// prune removes ended evals only.
import { randomUUID } from 'node:crypto';
import type { EvalCaseResult, EvalListItem } from '../../src/domain/types';
import type { NewEval } from '../../src/store/port';
import { adapters, useStore, type Store } from './adapters';
import { balance, lease, range, sleep, unique, workspace } from './fixtures';

/** The ids of the evals a claim took. */
const claimedIds = async (s: Store, ...args: Parameters<Store['evals']['claimDue']>) => (await s.evals.claimDue(...args)).map((c) => c.id);

const item = (id: string, agentId: string, createdAt: string, more: Partial<EvalListItem> = {}): EvalListItem => ({
  id,
  agent: { id: agentId, slug: 'support', version: 1 },
  dataset: { id: 'dataset-1', slug: 'refunds', version: 1 },
  repeats: 1,
  judge: 'judge-model',
  status: 'queued',
  gate: null,
  gate_result: null,
  summary: {
    runs: 2,
    runs_passed: 0,
    criteria: { passed: 0, failed: 0, errored: 0, skipped: 0, pending: 2 },
    pass_rate: null,
    incomplete: true,
    credits: { reserved: 0, agent: 0, judge: 0 },
  },
  started_by: 'user-1',
  created_at: createdAt,
  finished_at: null,
  error: null,
  ...more,
});

const STARTED = { type: 'eval.run_started', data: { case_id: 'a' } } as const;
const GRADED = { type: 'eval.run_graded', data: { passed: true } } as const;
const FINISHED = { type: 'eval.finished', data: { status: 'finished' } } as const;

const row = (caseId: string, more: Partial<EvalCaseResult> = {}): EvalCaseResult => ({
  case_id: caseId,
  repeat: 1,
  run_id: null,
  run_status: null,
  passed: null,
  criteria: [{ criterion_id: 'polite', type: 'judge', source: 'agent', outcome: 'pending', score: null, reason: null, grader: null }],
  ...more,
});

const newEval = (ws: string, agentId: string, more: Partial<NewEval> = {}, createdAt = new Date().toISOString()): NewEval => {
  const id = more.id ?? randomUUID();
  return {
    id,
    workspaceId: ws,
    agentId,
    team: null,
    item: item(id, agentId, createdAt),
    plan: '{"cases":["a","b"]}',
    runs: [row('a'), row('b')],
    reserve: 10,
    event: { type: 'eval.queued', data: { status: 'queued' } },
    ...more,
  };
};

/** A workspace of the case's own with `credits`. */
const funded = async (store: Store, credits: number): Promise<string> => {
  const ws = workspace();
  await store.workspaces.setCredits(ws, credits);
  return ws;
};

/** Creates an eval (must succeed) and claims it for `owner`. */
const claimed = async (store: Store, e: NewEval, owner: string): Promise<NewEval> => {
  expect(await store.evals.create(e)).toEqual({ ok: true });
  expect(await claimedIds(store, lease(owner), 1_000)).toContain(e.id);
  return e;
};

describe.each(adapters)('$name: evals', (adapter) => {
  const { store, opened } = useStore(adapter);

  test('a create takes its reservation from the balance; one the balance cannot cover writes nothing and says the balance', async () => {
    const ws = await funded(store, 100);
    const e = newEval(ws, unique('agent'), { reserve: 30, team: 'sales' });
    expect(await store.evals.create(e)).toEqual({ ok: true });
    expect(await balance(store, ws)).toBe(70);
    expect(await store.evals.find(ws, e.id)).toEqual({
      id: e.id,
      workspaceId: ws,
      agentId: e.agentId,
      team: 'sales',
      item: e.item,
      plan: e.plan,
      held: 30,
      results: e.runs,
    });
    expect(await store.evals.find(workspace(), e.id)).toBeNull();
    const over = newEval(ws, e.agentId, { reserve: 71 });
    expect(await store.evals.create(over)).toEqual({ ok: false, reason: 'balance', balance: 70 });
    expect(await store.evals.find(ws, over.id)).toBeNull();
    expect(await balance(store, ws)).toBe(70);
  });

  test("the list pages the agent's evals newest first (creation, then id), after the keyset; another workspace or agent sees none", async () => {
    const ws = await funded(store, 1_000);
    const agentId = unique('agent');
    const at = (s: number) => `2025-01-01T00:00:0${s}.000Z`;
    const id = (n: number) => `${ws}-e-${n}`;
    const evals = [newEval(ws, agentId, { id: id(1) }, at(1)), newEval(ws, agentId, { id: id(3) }, at(2)), newEval(ws, agentId, { id: id(2) }, at(2))];
    for (const e of [...evals, newEval(ws, unique('agent'))]) expect(await store.evals.create(e)).toEqual({ ok: true });
    const ids = (items: EvalListItem[]) => items.map((i) => i.id);
    expect(await store.evals.list(ws, agentId, null, 10)).toEqual([evals[1]!.item, evals[2]!.item, evals[0]!.item]);
    const first = await store.evals.list(ws, agentId, null, 2);
    expect(ids(first)).toEqual([id(3), id(2)]);
    const last = first[1]!;
    expect(ids(await store.evals.list(ws, agentId, { createdAt: last.created_at, id: last.id }, 2))).toEqual([id(1)]);
    expect(await store.evals.list(workspace(), agentId, null, 10)).toEqual([]);
  });

  test('of two stores claiming at once each eval is claimed once; a released or expired lease can be claimed again', async () => {
    const ws = await funded(store, 1_000);
    const created = range(10).map(() => newEval(ws, unique('agent')));
    for (const e of created) await store.evals.create(e);
    const mine = new Set(created.map((e) => e.id));
    const other = await opened.another();
    const claims = await Promise.all([store, other, store, other].map((s, i) => claimedIds(s, lease(`claimer-${i}`), 1_000)));
    const taken = claims.flat().filter((id) => mine.has(id));
    expect(taken.sort()).toEqual([...mine].sort());
    expect((await claimedIds(store, lease('late'), 1_000)).filter((id) => mine.has(id))).toEqual([]);
    // Released: due again at the time given, by any owner; only its owner releases it.
    const id = taken[0]!;
    const owner = `claimer-${claims.findIndex((c) => c.includes(id))}`;
    expect(await store.evals.release(id, 'stranger', Date.now() - 1)).toBe(false);
    expect(await store.evals.release(id, owner, Date.now() + 60_000)).toBe(true);
    expect(await claimedIds(store, lease('next'), 1_000)).not.toContain(id);
    expect(await store.evals.release(id, owner, Date.now() - 1)).toBe(false);
    // A lease that ran out: claimed again, and its first owner's writes are refused.
    const e = await claimed(store, newEval(ws, unique('agent')), 'short');
    expect(await store.evals.release(e.id, 'short', Date.now() - 1)).toBe(true);
    expect(await claimedIds(store, lease('brief', 1), 1_000)).toContain(e.id);
    await sleep(5);
    expect(await claimedIds(other, lease('taker'), 1_000)).toContain(e.id);
    expect(await store.evals.recordRun(e.id, 'brief', 0, 'run-lost', STARTED, 0)).toBe(false);
    expect(await store.evals.recordRun(e.id, 'taker', 0, 'run-0', STARTED, 0)).toBe(true);
  });

  test('a run is recorded once per row under the lease, marks the eval running and moves its credits back, never more than held', async () => {
    const ws = await funded(store, 100);
    const e = await claimed(store, newEval(ws, unique('agent'), { reserve: 40 }), 'driver');
    expect(await balance(store, ws)).toBe(60);
    expect(await store.evals.recordRun(e.id, 'stranger', 0, 'run-x', STARTED, 15)).toBe(false);
    expect((await store.evals.find(ws, e.id))!.item.status).toBe('queued');
    expect(await balance(store, ws)).toBe(60);
    expect(await store.evals.recordRun(e.id, 'driver', 0, 'run-a', STARTED, 15)).toBe(true);
    expect(await balance(store, ws)).toBe(75);
    expect(await store.evals.recordRun(e.id, 'driver', 0, 'run-again', STARTED, 15)).toBe(false);
    expect(await balance(store, ws)).toBe(75);
    const found = (await store.evals.find(ws, e.id))!;
    expect(found).toMatchObject({ held: 25, item: { status: 'running' } });
    expect(found.results.map((r) => r.run_id)).toEqual(['run-a', null]);
    expect((await store.evals.list(ws, e.agentId, null, 1))[0]!.status).toBe('running');
    // Only the writes that took effect appended their events.
    const events = await store.evals.events(e.id, 0, 100);
    expect(events.map((ev) => [ev.seq, ev.type, JSON.parse(ev.data)])).toEqual([
      [1, 'eval.queued', { status: 'queued' }],
      [2, 'eval.run_started', { case_id: 'a' }],
    ]);
    expect(await store.evals.events(e.id, 1, 100)).toEqual([events[1]]);
    expect(await store.evals.lastEvent(e.id)).toEqual(events[1]);
    expect(await store.evals.lastEvent('no-such-eval')).toBeNull();
  });

  test('grades write their rows, the item and the judge credits under the lease; finish gives back what is held, once', async () => {
    const ws = await funded(store, 100);
    const e = await claimed(store, newEval(ws, unique('agent'), { reserve: 20 }), 'driver');
    const graded = row('a', { run_id: 'run-a', run_status: 'succeeded', passed: true });
    graded.criteria[0] = { ...graded.criteria[0]!, outcome: 'passed', score: 1, reason: 'kind', grader: 'judge:m' };
    const next = { ...e.item, status: 'running' as const, summary: { ...e.item.summary, runs_passed: 1 } };
    const grades = [{ ordinal: 0, result: graded, judgeCredits: 3 }];
    expect(await store.evals.recordGrades(e.id, 'stranger', grades, next, [GRADED])).toBe(false);
    expect(await store.evals.recordGrades(e.id, 'driver', grades, next, [GRADED])).toBe(true);
    expect(await store.evals.find(ws, e.id)).toMatchObject({ held: 17, item: next, results: [graded, e.runs[1]] });
    // Judge credits past what is held take it to zero.
    expect(await store.evals.recordGrades(e.id, 'driver', [{ ordinal: 1, result: row('b'), judgeCredits: 50 }], next, [GRADED])).toBe(true);
    expect((await store.evals.find(ws, e.id))!.held).toBe(0);
    // Held is spent: a run recorded now moves nothing back (its run reserves from the balance).
    const before = await balance(store, ws);
    expect(await store.evals.recordRun(e.id, 'driver', 1, 'run-b', STARTED, 1)).toBe(true);
    expect(await balance(store, ws)).toBe(before);

    const f = await claimed(store, newEval(ws, unique('agent'), { reserve: 30 }), 'driver');
    expect(await balance(store, ws)).toBe(50);
    const end = { ...f.item, status: 'finished' as const, finished_at: new Date().toISOString() };
    expect(await store.evals.finish(f.id, 'stranger', end, FINISHED)).toBe(false);
    expect(await store.evals.finish(f.id, 'driver', end, FINISHED)).toBe(true);
    expect(await balance(store, ws)).toBe(80);
    expect(await store.evals.find(ws, f.id)).toMatchObject({ held: 0, item: end });
    expect(await store.evals.finish(f.id, 'driver', { ...end, status: 'failed' }, FINISHED)).toBe(false);
    expect(await store.evals.recordGrades(f.id, 'driver', [], end, [GRADED])).toBe(false);
    expect(await store.evals.release(f.id, 'driver', 0)).toBe(false);
    expect(await claimedIds(store, lease('after'), 1_000)).not.toContain(f.id);
    expect((await store.evals.events(f.id, 0, 100)).map((ev) => ev.type)).toEqual(['eval.queued', 'eval.finished']);
    expect((await store.evals.events(e.id, 0, 100)).map((ev) => ev.type)).toEqual(['eval.queued', 'eval.run_graded', 'eval.run_graded', 'eval.run_started']);
    expect(await balance(store, ws)).toBe(80);
  });

  test('prune deletes ended evals older than the time given, at most the limit; unfinished ones stay', async () => {
    const ws = await funded(store, 100);
    const ended = async (finishedAt: string) => {
      const e = await claimed(store, newEval(ws, unique('agent'), { reserve: 1 }), 'driver');
      expect(await store.evals.finish(e.id, 'driver', { ...e.item, status: 'failed', error: 'stopped', finished_at: finishedAt }, FINISHED)).toBe(true);
      return e.id;
    };
    const old = [await ended('2000-01-01T00:00:00.000Z'), await ended('2000-01-02T00:00:00.000Z')];
    const recent = await ended('2000-06-01T00:00:00.000Z');
    const waiting = newEval(ws, unique('agent'), {}, '1999-01-01T00:00:00.000Z');
    await store.evals.create(waiting);
    expect(await store.evals.prune('2000-03-01T00:00:00.000Z', 1)).toBe(1);
    expect(await store.evals.find(ws, old[0]!)).toBeNull();
    expect(await store.evals.prune('2000-03-01T00:00:00.000Z', 10)).toBe(1);
    expect(await store.evals.prune('2000-03-01T00:00:00.000Z', 10)).toBe(0);
    for (const id of [recent, waiting.id]) expect(await store.evals.find(ws, id)).not.toBeNull();
  });
});
