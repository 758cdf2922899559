import { uuidV7 } from '../../src/ids';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('a UUIDv7 carries its millisecond in its first 48 bits, then version 7 and the RFC 9562 variant', () => {
  const ms = Date.UTC(2026, 10, 21, 12, 0, 0, 123);
  const id = uuidV7(ms);
  expect(id).toMatch(V7);
  expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(ms);
});

test('ids of later milliseconds sort after earlier ones, and ids are distinct across refills of the random pool', () => {
  const start = Date.now();
  const ids = Array.from({ length: 5000 }, (_, i) => uuidV7(start + Math.floor(i / 10)));
  expect(new Set(ids).size).toBe(ids.length);
  for (let i = 10; i < ids.length; i += 10) expect((ids[i - 1] as string) < (ids[i] as string)).toBe(true);
  expect(ids.every((id) => V7.test(id))).toBe(true);
});
