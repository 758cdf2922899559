// What event subscriptions need of the store, on both adapters: an event and its deliveries are
// written with the change that caused it, for the endpoints subscribed to its type (and none for a
// workspace that subscribes to nothing); the claim serves each endpoint in turn within its room and
// never hands one delivery to two claimers (replicas on PostgreSQL claim at once); an attempt is
// recorded only by its claim; a forced disable fails what waited; a redelivery needs an ended one.
import { randomUUID } from 'node:crypto';
import { DELIVERY_LOG_ATTEMPTS, type EventEndpointCreate, type Store } from '../../src/store/port';
import { CLAIM_VISITS } from '../../src/store/shared/event-endpoints';
import { adapters, replicated, useStore } from './adapters';
import { agent, createAgent, range, unique, workspace } from './fixtures';

const endpoint = (more: Partial<EventEndpointCreate> = {}): EventEndpointCreate => ({
  id: randomUUID(),
  url: 'https://receiver.example/events',
  eventTypes: ['*'],
  description: null,
  status: 'enabled',
  allSpaces: false,
  teams: [],
  sealedSecret: 'sealed',
  secretPrefix: 'whsec_abcd',
  ...more,
});

async function subscribed(store: Store, ws: string, more: Partial<EventEndpointCreate> = {}) {
  const created = await store.eventEndpoints.create(ws, endpoint(more), 10);
  if (!created.ok) throw new Error('not created');
  return created.record;
}

const agentsCreated = async (store: Store, ws: string, n: number) => {
  for (const i of range(n)) await createAgent(store, ws, agent(unique(`a${i}`), { id: randomUUID() }));
};

/** An endpoint's first claimed deliveries: a claim looks at 64 endpoints with deliveries waiting at most, and earlier cases leave more. */
async function claimsOf(store: Store, endpointId: string, now: number) {
  for (const _ of range(5)) {
    const mine = (await store.eventEndpoints.claimDue(now, now + 60_000, 100, 1)).filter((c) => c.endpointId === endpointId);
    if (mine.length) return mine;
  }
  return [];
}

const ATTEMPT = { at: new Date().toISOString(), status_code: 200, latency_ms: 3, error: null, response_prefix: null };

describe.each(adapters)('event endpoints on $name', (adapter) => {
  const { store } = useStore(adapter);

  test('a change writes its event and a delivery per subscribed endpoint; unsubscribed types and workspaces get none', async () => {
    const ws = workspace();
    const all = await subscribed(store, ws);
    const runsOnly = await subscribed(store, ws, { eventTypes: ['run.finished'] });
    await agentsCreated(store, ws, 1);
    await agentsCreated(store, workspace(), 1);
    expect((await store.eventEndpoints.deliveries(ws, all.id, { status: null, before: null, limit: 10 })).map((d) => d.eventType)).toEqual(['agent.created']);
    expect(await store.eventEndpoints.deliveries(ws, runsOnly.id, { status: null, before: null, limit: 10 })).toEqual([]);
    const [delivery] = await store.eventEndpoints.deliveries(ws, all.id, { status: null, before: null, limit: 10 });
    expect(JSON.parse(delivery!.body)).toMatchObject({ type: 'agent.created', data: { sequence: 1, version: 1 } });
    expect(delivery!.eventId).toMatch(/^evt_[0-9a-f]{32}$/);
  });

  test('the claim: each endpoint in turn, within its room; one claim per delivery; only the claim records its attempt', async () => {
    const [a, b] = [workspace(), workspace()];
    await store.eventEndpoints.claimDue(Date.now() + 1000, Date.now() + 60_000, 1000, 1000); // what earlier cases left due
    const busy = await subscribed(store, a);
    const quiet = await subscribed(store, b);
    await agentsCreated(store, a, 6);
    await agentsCreated(store, b, 2);
    const now = Date.now() + 1000;
    const first = await store.eventEndpoints.claimDue(now, now + 60_000, 4, 3);
    const mine = first.filter((c) => c.endpointId === busy.id || c.endpointId === quiet.id);
    expect(mine.map((c) => (c.endpointId === busy.id ? 'busy' : 'quiet')).sort()).toEqual(['busy', 'busy', 'quiet', 'quiet']);
    const second = await store.eventEndpoints.claimDue(now, now + 60_000, 100, 3);
    // busy holds 2 under way: room for 1 more; none is claimed twice.
    expect(second.filter((c) => c.endpointId === busy.id)).toHaveLength(1);
    const claimed = [...first, ...second].filter((c) => c.endpointId === busy.id || c.endpointId === quiet.id);
    expect(new Set(claimed.map((c) => c.id)).size).toBe(claimed.length);
    const [one] = claimed;
    expect(await store.eventEndpoints.finishAttempt({ ...one!, attempt: one!.attempt + 1 }, { kind: 'succeeded', attempt: ATTEMPT }, now, 1000)).toBe(false);
    expect(await store.eventEndpoints.finishAttempt(one!, { kind: 'succeeded', attempt: ATTEMPT }, now, 1000)).toBe(true);
    expect(await store.eventEndpoints.finishAttempt(one!, { kind: 'succeeded', attempt: ATTEMPT }, now, 1000)).toBe(false);
    const recorded = await store.eventEndpoints.delivery(one!.workspaceId, one!.endpointId, one!.id);
    expect([recorded!.status, recorded!.attempts]).toEqual(['succeeded', [ATTEMPT]]);
  });

  test("each claim carries its endpoint's address and signing secrets; a delivery's log keeps its last attempts, in order", async () => {
    const ws = workspace();
    const target = await subscribed(store, ws, { url: 'https://receiver.example/hooks?for=log' });
    const until = Date.now() + 86_400_000;
    await store.eventEndpoints.rotate(ws, target.id, { sealed: 'sealed-next', prefix: 'whsec_next' }, until);
    await agentsCreated(store, ws, 1);
    let now = Date.now() + 1000;
    const attempts = DELIVERY_LOG_ATTEMPTS + 2;
    let deliveryId = '';
    for (const n of range(attempts)) {
      const [claim] = await claimsOf(store, target.id, now);
      expect(claim).toMatchObject({
        url: 'https://receiver.example/hooks?for=log',
        sealedSecret: 'sealed-next',
        previous: { sealed: 'sealed', untilMs: until },
        attempt: n,
        workspaceId: ws,
      });
      deliveryId = claim!.id;
      const outcome = { kind: 'retry' as const, attempt: { ...ATTEMPT, status_code: 500, latency_ms: n }, retryAtMs: now + 1 };
      expect(await store.eventEndpoints.finishAttempt(claim!, outcome, now, 86_400_000)).toBe(true);
      now += 1000;
    }
    const recorded = await store.eventEndpoints.delivery(ws, target.id, deliveryId);
    expect(recorded!.attempts.map((a) => a.latency_ms)).toEqual(range(DELIVERY_LOG_ATTEMPTS).map((i) => i + 2));
    expect(recorded!.status).toBe('pending');
  });

  test("one endpoint's backlog and more endpoints than a claim visits: every endpoint is served within a few claims, none past its room", async () => {
    const drain = async (now: number) => {
      while ((await store.eventEndpoints.claimDue(now, now + 60_000, 1000, 1000)).length);
    };
    await drain(Date.now() + 1000); // what earlier cases left due
    const backlogged = workspace();
    const flooding = await subscribed(store, backlogged);
    await agentsCreated(store, backlogged, 60);
    const others = range(CLAIM_VISITS + 6).map(() => workspace());
    const waiting = new Set<string>();
    for (const ws of others) {
      waiting.add((await subscribed(store, ws)).id);
      await agentsCreated(store, ws, 1);
    }
    const now = Date.now() + 1000;
    let claims = 0;
    let flooded = 0;
    while (waiting.size && claims < 10) {
      const claimed = await store.eventEndpoints.claimDue(now, now + 60_000, 32, 4);
      claims++;
      for (const c of claimed) waiting.delete(c.endpointId);
      flooded += claimed.filter((c) => c.endpointId === flooding.id).length;
    }
    expect(waiting.size).toBe(0);
    expect(claims).toBeLessThanOrEqual(Math.ceil((others.length + 1) / 32) + 1);
    for (const _ of range(3)) {
      flooded += (await store.eventEndpoints.claimDue(now, now + 60_000, 32, 4)).filter((c) => c.endpointId === flooding.id).length;
    }
    expect(flooded).toBe(4); // its room: the rest of its backlog waits for its attempts to end
  });

  test('a forced disable fails what waited and stops new deliveries; a redelivery needs an ended delivery of an enabled endpoint', async () => {
    const ws = workspace();
    const e = await subscribed(store, ws);
    await agentsCreated(store, ws, 3);
    const now = Date.now() + 1000;
    const [claim] = await claimsOf(store, e.id, now);
    const early = await store.eventEndpoints.redeliver(ws, e.id, claim!.id, now);
    expect(early).toBe('unfinished');
    const gone = { kind: 'failed' as const, attempt: { ...ATTEMPT, status_code: 410 }, disableReason: 'gone' };
    expect(await store.eventEndpoints.finishAttempt(claim!, gone, now, 3_600_000)).toBe(true);
    const after = await store.eventEndpoints.get(ws, e.id);
    expect([after!.status, after!.disabledReason]).toEqual(['disabled', 'gone']);
    expect((await store.eventEndpoints.deliveries(ws, e.id, { status: null, before: null, limit: 10 })).map((d) => d.status)).toEqual([
      'failed',
      'failed',
      'failed',
    ]);
    await agentsCreated(store, ws, 1);
    expect(await store.eventEndpoints.deliveries(ws, e.id, { status: null, before: null, limit: 10 })).toHaveLength(3);
    expect(await store.eventEndpoints.redeliver(ws, e.id, claim!.id, now)).toBe('disabled');
    const enabled = await store.eventEndpoints.replace(ws, e.id, after!.stampMicros, { ...after!, status: 'enabled' });
    expect(enabled.ok && enabled.record.disabledReason).toBeNull();
    expect(await store.eventEndpoints.redeliver(ws, e.id, claim!.id, now)).toBe('queued');
    expect(await store.eventEndpoints.redeliver(ws, e.id, randomUUID(), now)).toBe('missing');
  });
});

describe.each(replicated)('event deliveries claimed by replicas at once on $name', (adapter) => {
  const { opened, store } = useStore(adapter);

  test('three replicas claiming together never hand one delivery to two of them', async () => {
    const ws = workspace();
    await subscribed(store, ws);
    await agentsCreated(store, ws, 30);
    const replicas = [store, await opened.another(), await opened.another()];
    const now = Date.now() + 1000;
    const claims = await Promise.all(replicas.flatMap((r) => range(3).map(() => r.eventEndpoints.claimDue(now, now + 60_000, 5, 100))));
    const ids = claims.flat().map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBeGreaterThan(0);
  });
});
