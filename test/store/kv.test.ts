// The workspaces' key-value entries: set, get, delete, list by prefix (a range of byte-ordered
// keys, `%` and `_` plain), the limit of keys a workspace holds (checked in the write) — each
// case on both adapters.
import { adapters, useStore } from './adapters';
import { workspace } from './fixtures';

describe.each(adapters)('$name: kv', (adapter) => {
  const { store } = useStore(adapter);

  test('set, get (the JSON value as stored), overwrite, delete; in the workspace only', async () => {
    const ws = workspace();
    expect(await store.kv.get(ws, 'a')).toBeUndefined();
    expect(await store.kv.set(ws, 'a', { n: 1, list: [1, 'two', null], nested: { ok: true } })).toBe(true);
    expect(await store.kv.get(ws, 'a')).toEqual({ n: 1, list: [1, 'two', null], nested: { ok: true } });
    expect(await store.kv.set(ws, 'a', [1, 2])).toBe(true);
    expect(await store.kv.get(ws, 'a')).toEqual([1, 2]);
    for (const value of ['text', 0, false, null]) {
      await store.kv.set(ws, 'scalar', value);
      expect(await store.kv.get(ws, 'scalar')).toEqual(value);
    }
    expect(await store.kv.get(workspace(), 'a')).toBeUndefined();
    expect(await store.kv.delete(workspace(), 'a')).toBe(false);
    expect(await store.kv.delete(ws, 'a')).toBe(true);
    expect(await store.kv.delete(ws, 'a')).toBe(false);
    expect(await store.kv.get(ws, 'a')).toBeUndefined();
  });

  test('list by prefix: keys ordered byte-wise, `%` and `_` plain characters, at most `limit`', async () => {
    const ws = workspace();
    const keys = ['a', 'a%b', 'a_b', 'ab', 'abc', 'b', 'é', 'é2', '\u{10ffff}x', '\u{10ffff}', 'z', 'A'];
    for (const key of keys) await store.kv.set(ws, key, key);
    expect(await store.kv.list(ws, '', 100)).toEqual(['A', 'a', 'a%b', 'a_b', 'ab', 'abc', 'b', 'z', 'é', 'é2', '\u{10ffff}', '\u{10ffff}x']);
    expect(await store.kv.list(ws, 'a', 100)).toEqual(['a', 'a%b', 'a_b', 'ab', 'abc']);
    expect(await store.kv.list(ws, 'a%', 100)).toEqual(['a%b']);
    expect(await store.kv.list(ws, 'a_', 100)).toEqual(['a_b']);
    expect(await store.kv.list(ws, 'ab', 1)).toEqual(['ab']);
    expect(await store.kv.list(ws, 'a', 2)).toEqual(['a', 'a%b']);
    expect(await store.kv.list(ws, 'é', 100)).toEqual(['é', 'é2']);
    expect(await store.kv.list(ws, '\u{10ffff}', 100)).toEqual(['\u{10ffff}', '\u{10ffff}x']);
    expect(await store.kv.list(ws, 'nothing', 100)).toEqual([]);
    expect(await store.kv.list(workspace(), '', 100)).toEqual([]);
  });

  test('a prefix finds keys whose next character is outside the BMP, and only keys with the prefix', async () => {
    const ws = workspace();
    const keys = ['a', 'a\u{1F600}', 'a\u{10FFFF}x', 'a\uffff', 'a\u{E000}', 'ab', 'b', '\u{10FFFF}', '\u{10FFFF}\u{10FFFF}', 'a\u{10FFFF}'];
    for (const key of keys) await store.kv.set(ws, key, 1);
    expect(await store.kv.list(ws, 'a', 100)).toEqual(['a', 'ab', 'a\u{E000}', 'a\uffff', 'a\u{1F600}', 'a\u{10FFFF}', 'a\u{10FFFF}x']);
    expect(await store.kv.list(ws, 'a\u{1F600}', 100)).toEqual(['a\u{1F600}']);
    expect(await store.kv.list(ws, '\u{10FFFF}', 100)).toEqual(['\u{10FFFF}', '\u{10FFFF}\u{10FFFF}']);
    expect(await store.kv.list(ws, '', 100)).toHaveLength(keys.length);
  });

  test('a key with U+0000 (which PostgreSQL text cannot hold) is one no entry has', async () => {
    const ws = workspace();
    await store.kv.set(ws, 'a', 1);
    expect(await store.kv.get(ws, 'a\u0000')).toBeUndefined();
    expect(await store.kv.list(ws, 'a\u0000', 10)).toEqual([]);
    expect(await store.kv.delete(ws, 'a\u0000')).toBe(false);
    expect(await store.kv.get(ws, 'a')).toBe(1);
  });

  it('setting a key with U+0000 behaves alike (refused, nothing stored)', async () => {
    const ws = workspace();
    await expect(store.kv.set(ws, 'k\u0000', 1)).rejects.toThrow();
    expect(await store.kv.list(ws, '', 10)).toEqual([]);
  });

  test('a workspace holds at most maxKeys keys: a new key past it is refused (nothing stored); existing keys are still updated', async () => {
    const ws = workspace();
    for (const key of ['k1', 'k2', 'k3']) expect(await store.kv.set(ws, key, key, 3)).toBe(true);
    expect(await store.kv.set(ws, 'k4', 'k4', 3)).toBe(false);
    expect(await store.kv.get(ws, 'k4')).toBeUndefined();
    expect(await store.kv.set(ws, 'k2', 'updated', 3)).toBe(true);
    expect(await store.kv.get(ws, 'k2')).toBe('updated');
    expect(await store.kv.list(ws, '', 10)).toEqual(['k1', 'k2', 'k3']);
    // Another workspace counts its own keys.
    expect(await store.kv.set(workspace(), 'k4', 1, 3)).toBe(true);
    // A deleted key frees its place.
    expect(await store.kv.delete(ws, 'k1')).toBe(true);
    expect(await store.kv.set(ws, 'k4', 'k4', 3)).toBe(true);
    expect(await store.kv.list(ws, '', 10)).toEqual(['k2', 'k3', 'k4']);
  });

  test('concurrent writes of one key: the last write is what get returns; concurrent new keys on one store stop at the limit', async () => {
    const ws = workspace();
    await Promise.all(Array.from({ length: 10 }, (_, i) => store.kv.set(ws, 'same', i)));
    expect(typeof (await store.kv.get(ws, 'same'))).toBe('number');
    const other = workspace();
    const written = await Promise.all(Array.from({ length: 8 }, (_, i) => store.kv.set(other, `n${i}`, i, 5)));
    // One store's writes follow each other here: exactly the limit (the interface allows PostgreSQL
    // writes of new keys at the same instant to pass it, under READ COMMITTED, across connections).
    expect(written.filter(Boolean).length).toBeGreaterThanOrEqual(5);
    expect((await store.kv.list(other, '', 100)).length).toBe(written.filter(Boolean).length);
  });
});
