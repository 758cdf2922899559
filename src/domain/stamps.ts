// Version stamps: ISO 8601 UTC with microseconds, strictly increasing per document. Stamps are
// compared as instants (microseconds since the epoch), so an agent stamp written with a numeric
// offset that names the same instant matches.

const STAMP_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Microseconds since the epoch, or null when the text is not a date-time this API accepts. */
export function parseStampMicros(text: string): number | null {
  const m = STAMP_RE.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac = '', z, sign, oh, om] = m;
  const millis = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  if (Number.isNaN(millis)) return null;
  // Digits past the sixth must be zero: a finer instant than a stamp can hold matches no stamp.
  if (frac.length > 6 && !/^0+$/.test(frac.slice(6))) return null;
  const micros = Number(frac.slice(0, 6).padEnd(6, '0'));
  const offsetMinutes = z ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  return millis * 1000 + micros - offsetMinutes * 60_000_000;
}

export function formatStamp(micros: number): string {
  const millis = Math.floor(micros / 1000);
  const iso = new Date(millis).toISOString(); // 2026-11-21T10:00:00.123Z
  const subMillis = String(micros - millis * 1000).padStart(3, '0');
  return `${iso.slice(0, 23)}${subMillis}Z`;
}

/**
 * A clock of microsecond stamps that never repeats or goes back within the process, and that a
 * caller can push past a stored stamp (so a document's stamps grow even if the wall clock is set back).
 */
export class StampClock {
  private last = 0;

  constructor(private readonly nowMicros: () => number = wallClockMicros) {}

  next(after = 0): number {
    const candidate = Math.max(this.nowMicros(), this.last + 1, after + 1);
    this.last = candidate;
    return candidate;
  }
}

const hrtimeOrigin = process.hrtime.bigint();
const wallOrigin = Date.now() * 1000;

/** Wall-clock microseconds: Date.now() has millisecond resolution, hrtime supplies the rest. */
export function wallClockMicros(): number {
  return wallOrigin + Number((process.hrtime.bigint() - hrtimeOrigin) / 1000n);
}
