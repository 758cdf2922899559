import { formatStamp, parseStampMicros, StampClock } from '../../src/domain/stamps';
import { etagFor, ifMatchAdmits, parseIfMatch } from '../../src/domain/etag';

describe('stamps', () => {
  test('format and parse round-trip with microseconds', () => {
    const micros = Date.UTC(2026, 10, 21, 10, 0, 0) * 1000 + 123456;
    expect(formatStamp(micros)).toBe('2026-11-21T10:00:00.123456Z');
    expect(parseStampMicros('2026-11-21T10:00:00.123456Z')).toBe(micros);
  });

  test('a numeric offset naming the same instant parses to the same micros', () => {
    expect(parseStampMicros('2026-11-21T12:00:00.123456+02:00')).toBe(parseStampMicros('2026-11-21T10:00:00.123456Z'));
    expect(parseStampMicros('2026-11-21T09:30:00.5-00:30')).toBe(parseStampMicros('2026-11-21T10:00:00.500000Z'));
  });

  test('digits finer than a microsecond must be zero to name a stamp', () => {
    expect(parseStampMicros('2026-11-21T10:00:00.123456000Z')).toBe(parseStampMicros('2026-11-21T10:00:00.123456Z'));
    expect(parseStampMicros('2026-11-21T10:00:00.123456789Z')).toBeNull();
  });

  test('text that is not a date-time with a zone is rejected', () => {
    for (const bad of ['', '2026-11-21', '2026-11-21T10:00:00', 'yesterday', '2026-11-21T10:00:00.1Zjunk']) expect(parseStampMicros(bad)).toBeNull();
  });

  test('the clock never repeats, never goes back, and passes a stored stamp', () => {
    let now = 1000;
    const clock = new StampClock(() => now);
    expect(clock.next()).toBe(1000);
    expect(clock.next()).toBe(1001); // same microsecond: pushed forward
    now = 500; // wall clock set back
    expect(clock.next()).toBe(1002);
    expect(clock.next(5000)).toBe(5001); // stored stamp from a faster clock
  });
});

describe('entity tags', () => {
  test('an ETag is the stamp in double quotes', () => {
    expect(etagFor('2026-11-21T10:00:00.123456Z')).toBe('"2026-11-21T10:00:00.123456Z"');
  });

  test('If-Match takes *, one tag or a list; weak tags never match', () => {
    const equal = (a: string, b: string) => a === b;
    expect(ifMatchAdmits(parseIfMatch('*')!, 's1', equal)).toBe(true);
    expect(ifMatchAdmits(parseIfMatch('"s1"')!, 's1', equal)).toBe(true);
    expect(ifMatchAdmits(parseIfMatch('"s0", "s1"')!, 's1', equal)).toBe(true);
    expect(ifMatchAdmits(parseIfMatch('W/"s1"')!, 's1', equal)).toBe(false);
    expect(ifMatchAdmits(parseIfMatch('"s0"')!, 's1', equal)).toBe(false);
    expect(parseIfMatch('s1')).toBeNull();
    expect(parseIfMatch('"s1" junk')).toBeNull();
  });
});
