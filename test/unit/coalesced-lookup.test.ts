// The PostgreSQL adapter's coalesced confirmations, without a database: what makes a held version
// safe to answer is that every lookup is answered by a fetch that started after it was asked.
import { CoalescedLookup } from '../../src/store/postgres/coalesced-lookup';

/** A fetch that records each batch and resolves when told, with what `values` holds when it resolves. */
function controlledFetch(values: Map<string, number>) {
  const batches: string[][] = [];
  const pending: { resolve: () => void; reject: (err: Error) => void }[] = [];
  const fetch = (batch: ReadonlyMap<string, null>) => {
    batches.push([...batch.keys()]);
    return new Promise<ReadonlyMap<string, number>>((resolve, reject) => {
      pending.push({ resolve: () => resolve(new Map(values)), reject });
    });
  };
  return { fetch, batches, pending };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('a lookup asked while a fetch is in flight waits for the next fetch, which sees what changed meanwhile', async () => {
  const values = new Map([['a', 1]]);
  const { fetch, batches, pending } = controlledFetch(values);
  const lookup = new CoalescedLookup<null, number>(fetch);
  const first = lookup.get('a', null);
  expect(batches).toEqual([['a']]);
  // A write lands, then a read is asked: it must not be answered by the fetch sent before it.
  values.set('a', 2);
  const second = lookup.get('a', null);
  const third = lookup.get('b', null);
  await tick();
  expect(batches).toEqual([['a']]); // one fetch at a time
  pending[0]!.resolve();
  expect(await first).toBe(2); // (the controlled fetch reads `values` when it resolves)
  await tick();
  expect(batches).toEqual([['a'], ['a', 'b']]); // the waiting lookups, together, each key once
  values.set('a', 3);
  pending[1]!.resolve();
  expect(await second).toBe(3);
  expect(await third).toBeUndefined(); // a key the fetch did not return
});

test('a failed fetch rejects its own lookups only; the next batch is sent', async () => {
  const { fetch, batches, pending } = controlledFetch(new Map([['k', 7]]));
  const lookup = new CoalescedLookup<null, number>(fetch);
  const failing = lookup.get('k', null);
  const later = lookup.get('k', null);
  pending[0]!.reject(new Error('connection lost'));
  await expect(failing).rejects.toThrow('connection lost');
  await tick();
  expect(batches).toHaveLength(2);
  pending[1]!.resolve();
  expect(await later).toBe(7);
});

test('a batch holds at most 256 keys; the rest go in the next', async () => {
  const { fetch, batches, pending } = controlledFetch(new Map());
  const lookup = new CoalescedLookup<null, number>(fetch);
  const blocker = lookup.get('first', null);
  const many = Array.from({ length: 300 }, (_, i) => lookup.get(`k${i}`, null));
  pending[0]!.resolve();
  await blocker;
  await tick();
  expect(batches[1]).toHaveLength(256);
  pending[1]!.resolve();
  await tick();
  await tick();
  expect(batches[2]).toHaveLength(44);
  pending[2]!.resolve();
  expect(await Promise.all(many)).toEqual(Array(300).fill(undefined));
});
