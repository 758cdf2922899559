// Workspaces' credits, connections, the built-in issuer's signing key and the readiness probe —
// each case on both adapters.
import { adapters, useStore } from './adapters';
import { workspace } from './fixtures';

describe.each(adapters)('$name: workspaces, connections, signing key, ping', (adapter) => {
  const { opened, store } = useStore(adapter);

  test('a workspace seen for the first time starts with the initial credits, once; setCredits overrides', async () => {
    const ws = workspace();
    expect(await store.workspaces.credits(ws, 1000)).toBe(1000);
    expect(await store.workspaces.credits(ws, 5)).toBe(1000);
    await store.workspaces.setCredits(ws, 7);
    expect(await store.workspaces.credits(ws, 1000)).toBe(7);
    await store.workspaces.setCredits(ws, 0);
    expect(await store.workspaces.credits(ws, 1000)).toBe(0);
    const bySet = workspace();
    await store.workspaces.setCredits(bySet, 3);
    expect(await store.workspaces.credits(bySet, 1000)).toBe(3);
  });

  test('of concurrent first reads with different initial amounts, one amount is the balance', async () => {
    const ws = workspace();
    const first = await Promise.all(Array.from({ length: 10 }, (_, i) => store.workspaces.credits(ws, 1000 + i)));
    expect(new Set(first).size).toBe(1);
    expect(await store.workspaces.credits(ws, 0)).toBe(first[0]);
  });

  test('connections: listed by ref; an upsert replaces the one with the same ref; in the workspace only', async () => {
    const ws = workspace();
    expect(await store.connections.list(ws)).toEqual([]);
    await store.connections.upsert(ws, { ref: 'main', app: 'kv', label: null, status: 'connected' });
    expect(await store.connections.list(ws)).toEqual([{ ref: 'main', app: 'kv', label: null, status: 'connected' }]);
    await store.connections.upsert(ws, { ref: 'b-other', app: 'http', label: 'Other', status: 'connected' });
    await store.connections.upsert(ws, { ref: 'main', app: 'kv', label: 'Main', status: 'expired' });
    expect(await store.connections.list(ws)).toEqual([
      { ref: 'b-other', app: 'http', label: 'Other', status: 'connected' },
      { ref: 'main', app: 'kv', label: 'Main', status: 'expired' },
    ]);
    expect(await store.connections.list(workspace())).toEqual([]);
  });

  test('signingKey: the first call stores what generate makes; later calls, and other stores on the database, read it back', async () => {
    const made: string[] = [];
    const generate = () => {
      made.push(`-----BEGIN PRIVATE KEY-----\nkey-${made.length + 1}\n-----END PRIVATE KEY-----\n`);
      return made[made.length - 1]!;
    };
    const key = await store.signingKey(generate);
    expect(made).toHaveLength(1);
    expect(key).toBe(made[0]);
    expect(await store.signingKey(generate)).toBe(key);
    expect(made).toHaveLength(1); // not generated again
    const other = await opened.another();
    expect(await other.signingKey(() => 'another key')).toBe(key);
  });

  test('ping answers while the database does', async () => {
    await expect(store.ping()).resolves.toBeUndefined();
  });
});

describe.each(adapters)('$name: a store’s lifetime', (adapter) => {
  test('stores opened together on a fresh database share one signing key; ping rejects once closed; what was written is there on reopening', async () => {
    const opened = await adapter.open();
    try {
      const [a, b] = [opened.store, await opened.another()];
      const keys = await Promise.all([a.signingKey(() => 'key-a'), b.signingKey(() => 'key-b')]);
      expect(keys[0]).toBe(keys[1]);
      expect(['key-a', 'key-b']).toContain(keys[0]);
      const ws = workspace();
      await a.workspaces.setCredits(ws, 42);
      await a.kv.set(ws, 'k', 'v');
      await a.close();
      await expect(a.ping()).rejects.toThrow();
      const c = await opened.another();
      expect(await c.workspaces.credits(ws, 0)).toBe(42);
      expect(await c.kv.get(ws, 'k')).toBe('v');
      expect(await c.signingKey(() => 'key-c')).toBe(keys[0]);
    } finally {
      await opened.close();
    }
  });
});
