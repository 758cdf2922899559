// What the app-event triggers need of the store, on both adapters: an app_event trigger's row names
// its workspace, app and connection, following its document's writes; a kv change writes its event
// in its own transaction, only when a kv trigger of the workspace listens and only when something
// changed; a waiting event is claimed by one claimer at a time and goes when finished.
import { randomUUID } from 'node:crypto';
import { adapters, useStore } from './adapters';
import { agent, createAgent, ok, unique, workspace, WRITER, type TriggerDoc } from './fixtures';

const listening = (id: string, app: string, connection: string, event = 'key.set'): TriggerDoc =>
  ({ kind: 'app_event', id, name: id, prompt: null, enabled: true, app, event, connection }) as TriggerDoc;

describe.each(adapters)('$name: app events', (adapter) => {
  const { store } = useStore(adapter);

  test("an app_event trigger's row names its app and connection, and follows replaces and drops", async () => {
    const ws = workspace();
    const [a, b] = [randomUUID(), randomUUID()];
    const record = await createAgent(store, ws, agent(unique('listener'), { triggers: [listening(a, 'github', 'gh:1', 'push'), listening(b, 'kv', 'kv:1')] }));
    expect(await store.appEvents.listeners(ws, 'github', 'gh:1')).toEqual([{ triggerId: a, agentId: record.id }]);
    expect(await store.appEvents.listeners(ws, 'github', 'gh:2')).toEqual([]);
    expect(await store.appEvents.listeners(ws, 'kv')).toEqual([{ triggerId: b, agentId: record.id }]);
    expect(await store.appEvents.listeners(workspace(), 'kv')).toEqual([]);
    const moved = { ...record.document, triggers: [listening(a, 'github', 'gh:2', 'push')] };
    await ok(store.agents.replace(ws, record.id, record.stampMicros, moved, [], WRITER));
    expect(await store.appEvents.listeners(ws, 'github', 'gh:1')).toEqual([]);
    expect(await store.appEvents.listeners(ws, 'github', 'gh:2')).toEqual([{ triggerId: a, agentId: record.id }]);
    expect(await store.appEvents.listeners(ws, 'kv')).toEqual([]);
  });

  test('a kv change writes its event only when a kv trigger listens and something changed', async () => {
    const ws = workspace();
    // Ids that sort as they are made: two events of one millisecond are claimed in id order.
    const base = randomUUID();
    let seq = 0;
    const origin = () => ({ eventId: `${base}-${String(++seq).padStart(4, '0')}`, chain: 2 });
    await store.kv.set(ws, 'unheard', 1, 10, origin());
    await store.kv.delete(ws, 'unheard', origin());
    expect(await store.appEvents.claimPending(Date.now(), Date.now() + 1000, 100).then((e) => e.filter((p) => p.workspaceId === ws))).toEqual([]);
    await createAgent(store, ws, agent(unique('listener'), { triggers: [listening(randomUUID(), 'kv', 'kv:1')] }));
    expect(await store.kv.set(ws, 'k', { n: 1 }, 10, origin())).toBe(true);
    expect(await store.kv.set(ws, 'over', 1, 1, origin())).toBe(false); // the key limit refuses it: no change, no event
    expect(await store.kv.delete(ws, 'absent', origin())).toBe(false);
    expect(await store.kv.delete(ws, 'k', origin())).toBe(true);
    const now = Date.now();
    const claimed = (await store.appEvents.claimPending(now, now + 60_000, 100)).filter((p) => p.workspaceId === ws);
    expect(claimed.map((p) => [p.app, p.event, JSON.parse(p.payload), p.chain])).toEqual([
      ['kv', 'key.set', { key: 'k', value: { n: 1 } }, 2],
      ['kv', 'key.deleted', { key: 'k' }, 2],
    ]);
    // Claimed: no one else gets them until the claim lapses; finished: gone.
    expect((await store.appEvents.claimPending(now + 1, now + 60_000, 100)).filter((p) => p.workspaceId === ws)).toEqual([]);
    const lapsed = (await store.appEvents.claimPending(now + 60_001, now + 120_000, 100)).filter((p) => p.workspaceId === ws);
    expect(lapsed.map((p) => p.id)).toEqual(claimed.map((p) => p.id));
    for (const p of claimed) await store.appEvents.finishPending(p.id);
    expect((await store.appEvents.claimPending(now + 200_000, now + 300_000, 100)).filter((p) => p.workspaceId === ws)).toEqual([]);
  });

  test('concurrent claimers: each waiting event goes to one of them', async () => {
    const ws = workspace();
    await createAgent(store, ws, agent(unique('listener'), { triggers: [listening(randomUUID(), 'kv', 'kv:1')] }));
    for (let i = 0; i < 20; i++) await store.kv.set(ws, `k${i}`, i, 100, { eventId: randomUUID(), chain: 1 });
    const now = Date.now() + 10_000_000; // past any other case's claims
    const claims = await Promise.all(Array.from({ length: 5 }, () => store.appEvents.claimPending(now, now + 60_000, 100)));
    const mine = claims
      .flat()
      .filter((p) => p.workspaceId === ws)
      .map((p) => p.id);
    expect(mine).toHaveLength(20);
    expect(new Set(mine).size).toBe(20);
    for (const id of mine) await store.appEvents.finishPending(id);
  });
});
