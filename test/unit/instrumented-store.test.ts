// The timed view of the store (store/instrumented.ts): every method, nested ones included, reports
// `<repository>.<method>` and its duration; results, rejections, `this`, getters and private fields
// are the adapter's own.
import { instrumentedStore } from '../../src/store/instrumented';
import type { Store } from '../../src/store/port';

class Runs {
  #rows = new Map([['r1', { id: 'r1' }]]);
  limit = 3;
  get size() {
    return this.#rows.size;
  }
  async find(id: string) {
    return this.#rows.get(id) ?? null;
  }
  async fail() {
    throw new Error('refused');
  }
  count() {
    return this.#rows.size;
  }
}

test('each call is observed by name once it settles; what the adapter returns or throws passes through unchanged', async () => {
  const calls: string[] = [];
  const raw = { runs: new Runs(), agents: { versions: { list: async () => ['v1'] } }, ping: async () => undefined } as unknown as Store;
  const store = instrumentedStore(raw, (name, seconds) => {
    expect(seconds).toBeGreaterThanOrEqual(0);
    calls.push(name);
  });
  const runs = store.runs as unknown as Runs;
  const pending = runs.find('r1');
  expect(calls).toEqual([]); // not before it settles
  expect(await pending).toEqual({ id: 'r1' });
  await expect(runs.fail()).rejects.toThrow('refused');
  expect(runs.count()).toBe(1); // a synchronous method stays synchronous
  expect(runs.size).toBe(1); // a getter reads the adapter's private field
  expect(runs.limit).toBe(3);
  expect(await (store.agents as unknown as { versions: { list(): Promise<string[]> } }).versions.list()).toEqual(['v1']);
  await store.ping();
  await new Promise((r) => setImmediate(r));
  expect(calls).toEqual(['runs.find', 'runs.fail', 'runs.count', 'agents.versions.list', 'ping']);
  // The same method is the same function each time (made once).
  expect(runs.find).toBe(runs.find);
});
