// The request quotas' counters: units taken from a window never pass its quota, however many take
// at once (on PostgreSQL, from several replicas); a new window starts empty; pruning forgets old
// windows — each case on both adapters.
import { adapters, replicated, useStore } from './adapters';
import { workspace } from './fixtures';

describe.each(adapters)('$name: quotas', (adapter) => {
  const { store } = useStore(adapter);

  test('takes what is asked until the quota, then what is left, then nothing; a new window starts empty', async () => {
    const key = `caller:${workspace()}`;
    expect(await store.quotas.take(key, 100, 4, 10)).toEqual({ granted: 4, used: 4 });
    expect(await store.quotas.take(key, 100, 4, 10)).toEqual({ granted: 4, used: 8 });
    expect(await store.quotas.take(key, 100, 4, 10)).toEqual({ granted: 2, used: 10 });
    expect(await store.quotas.take(key, 100, 1, 10)).toEqual({ granted: 0, used: 10 });
    expect(await store.quotas.take(key, 101, 3, 10)).toEqual({ granted: 3, used: 3 });
    expect(await store.quotas.take(`other:${key}`, 100, 1, 10)).toEqual({ granted: 1, used: 1 });
  });

  test('a quota lowered below what a window used grants nothing and never lowers the count', async () => {
    const key = `lowered:${workspace()}`;
    await store.quotas.take(key, 7, 8, 10);
    const spent = await store.quotas.take(key, 7, 1, 5);
    expect(spent.granted).toBe(0);
    expect(spent.used).toBeGreaterThanOrEqual(5);
    expect(await store.quotas.take(key, 7, 5, 10)).toEqual({ granted: 2, used: 10 });
  });

  test('200 takes at once never grant more than the quota between them', async () => {
    const key = `burst:${workspace()}`;
    const takes = await Promise.all(Array.from({ length: 200 }, (_, i) => store.quotas.take(key, 5, 1 + (i % 3), 150)));
    expect(takes.reduce((sum, t) => sum + t.granted, 0)).toBe(150);
    expect(Math.max(...takes.map((t) => t.used))).toBe(150);
  });

  test('pruning forgets the windows before the one given, in batches', async () => {
    const key = `pruned:${workspace()}`;
    await store.quotas.take(key, 1, 5, 10);
    await store.quotas.take(`${key}:b`, 1, 5, 10);
    await store.quotas.take(`${key}:c`, 3, 5, 10);
    let pruned = 0;
    for (let last = 1; last > 0; pruned += last) last = await store.quotas.prune(3, 1);
    expect(pruned).toBeGreaterThanOrEqual(2);
    expect(await store.quotas.take(`${key}:c`, 3, 10, 10)).toEqual({ granted: 5, used: 10 });
  });
});

describe.each(replicated)('$name only: quotas across replicas', (adapter) => {
  const { opened } = useStore(adapter);

  test('two replicas taking the same window at once share one quota', async () => {
    const [a, b] = [opened.store, await opened.another()];
    const key = `shared:${workspace()}`;
    const takes = await Promise.all(Array.from({ length: 120 }, (_, i) => (i % 2 ? a : b).quotas.take(key, 9, 2, 101)));
    expect(takes.reduce((sum, t) => sum + t.granted, 0)).toBe(101);
    expect((await b.quotas.take(key, 9, 1, 101)).granted).toBe(0);
  });
});
