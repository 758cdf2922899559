// What both adapters decide alike about the kv store: the range a prefix covers.

/**
 * The least string above every string that starts with `prefix`, or null when there is none (an
 * empty prefix). Both stores compare keys as UTF-8 bytes (PostgreSQL: COLLATE "C"), which orders as code points do, so this is the
 * prefix with its last code point raised by one (past the surrogates, which are not code points of
 * text); a last code point that cannot be raised is dropped and the one before it raised.
 * (`prefix + '\uffff'` is no such bound: every character outside the BMP sorts above U+FFFF.)
 */
export function prefixUpperBound(prefix: string): string | null {
  const points = [...prefix].map((c) => c.codePointAt(0) as number);
  while (points.length) {
    const last = points.pop() as number;
    if (last < 0x10ffff) {
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return String.fromCodePoint(...points, next);
    }
  }
  return null;
}

/**
 * Whether a key can be stored: no U+0000, which PostgreSQL's text cannot hold. Both adapters treat
 * such a key alike: no entry has it (get, list, delete find nothing) and a set of it is refused.
 */
export const storableKey = (key: string): boolean => !key.includes('\u0000');

export class UnstorableKeyError extends Error {
  constructor() {
    super('kv: a key cannot contain U+0000 (NUL)');
  }
}
