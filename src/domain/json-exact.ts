// What JSON.parse silently changes in a text it accepts, found in one linear pass over that text:
//   a member name repeated in one object (JSON.parse keeps the last; RFC 7493, I-JSON, forbids it,
//   so that a proxy and the service cannot read one body two ways);
//   a number that no double holds exactly as written: an integer literal beyond ±(2^53−1) (I-JSON's
//   interoperable range), a magnitude that overflows to Infinity, a non-zero value that underflows
//   to 0, or more significant digits than the nearest double keeps (it would be stored as another
//   number).
// Lone surrogates, which JSON.parse also accepts, are found in the parsed value (json-limits.ts,
// refusedTextIn), where values that arrive already parsed are checked too.
//
// The text must already be known to be JSON (JSON.parse accepted it): the pass checks, it does not
// re-validate the grammar. It never backtracks and holds, beyond the path it is at, only the member
// names of the objects it is inside.
import { memberPath, NOT_JSON, parseJsonWithin, type RefusedText } from './json-limits';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const MINUS = 0x2d;

/** An object or array the pass is inside: its member names so far (objects), its current position. */
interface Frame {
  isObject: boolean;
  /** The member name or index of the value being read, as the path names it. */
  at: string | number;
  /** The first member name; a set once there are two (most objects of a document are small). */
  first?: string;
  names?: Set<string>;
  expectsName: boolean;
}

/** The first thing in `text` (valid JSON) that JSON.parse would change, with its path below `base`; or null. */
export function inexactJsonIn(text: string, base: string): RefusedText | null {
  const frames: Frame[] = [];
  const pathHere = () => frames.reduce((path, f) => (typeof f.at === 'number' ? `${path}[${f.at}]` : memberPath(path, f.at)), base);
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    const top = frames[frames.length - 1];
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (top?.isObject && top.expectsName) {
        const name = decodeName(text, i, end);
        top.expectsName = false;
        top.at = name;
        if (repeats(top, name)) return { path: pathHere(), rule: DUPLICATE_RULE };
      }
      i = end + 1;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      frames.push({ isObject: c === OPEN_OBJECT, at: c === OPEN_OBJECT ? '' : 0, expectsName: c === OPEN_OBJECT });
      i++;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      frames.pop();
      i++;
    } else if (c === COMMA) {
      if (top?.isObject) top.expectsName = true;
      else if (top) top.at = (top.at as number) + 1;
      i++;
    } else if (c === MINUS || (c >= 0x30 && c <= 0x39)) {
      const end = numberEnd(text, i);
      // Up to 15 characters of digits, sign and point, with no exponent: every such decimal survives
      // a double's round trip, and such an integer is below 2^53. Most numbers of a document end here.
      if (end - i > 15 || end < 0) {
        const literal = text.slice(i, end < 0 ? -end : end);
        const rule = inexactNumber(literal);
        if (rule) return { path: pathHere(), rule };
      }
      i = end < 0 ? -end : end;
    } else i++; // whitespace, ':', and the letters of true, false and null
  }
  return null;
}

const DUPLICATE_RULE = 'is a duplicate member name (each member may appear once in an object, as RFC 7493 requires)';

function repeats(frame: Frame, name: string): boolean {
  if (frame.first === undefined) {
    frame.first = name;
    return false;
  }
  frame.names ??= new Set([frame.first]);
  if (frame.names.has(name)) return true;
  frame.names.add(name);
  return false;
}

/** The index of the quote that closes the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  let at = start + 1;
  for (;;) {
    const quote = text.indexOf('"', at);
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

function decodeName(text: string, start: number, end: number): string {
  const raw = text.slice(start + 1, end);
  return raw.includes('\\') ? (JSON.parse(text.slice(start, end + 1)) as string) : raw;
}

/** Where the number starting at `start` ends; negated when it has an exponent (JSON.parse has checked its grammar). */
function numberEnd(text: string, start: number): number {
  let at = start + 1;
  let exponent = false;
  for (;;) {
    const c = text.charCodeAt(at);
    if ((c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2b || c === MINUS) at++;
    else if (c === 0x65 || c === 0x45) {
      exponent = true;
      at++;
    } else return exponent ? -at : at;
  }
}

export const MAX_EXACT_INTEGER = Number.MAX_SAFE_INTEGER;

/** Why a JSON number literal is not held exactly by a double, or null when it is. */
export function inexactNumber(literal: string): string | null {
  if (literal.length <= 15 && !/[eE]/.test(literal)) return null; // as inexactJsonIn's own shortcut
  const value = Number(literal);
  const sent = significantDigits(literal);
  if (!Number.isFinite(value)) return `${quoted(literal)} is beyond the range of a double (±1.7976931348623157e308)`;
  if (sent === '') return null; // a zero, however written
  if (value === 0) return `${quoted(literal)} is too small for a double and would become 0 (the smallest is 5e-324)`;
  if (!/[.eE]/.test(literal) && Math.abs(value) > MAX_EXACT_INTEGER) {
    return `${quoted(literal)} is an integer beyond ±${MAX_EXACT_INTEGER} (2^53−1), which not every JSON reader holds exactly; send it as a string`;
  }
  if (String(value) === literal) return null; // as JavaScript writes it: the shortest text of that double
  const kept = significantDigits(String(Math.abs(value)));
  if (kept !== sent)
    return `${quoted(literal)} has more significant digits than a double keeps: it would be stored as ${value}; send it as a string or round it`;
  return null;
}

/** The literal's digits without sign, point, exponent, leading or trailing zeros: `-0.01230e5` → `123`. */
function significantDigits(literal: string): string {
  const exponentAt = literal.search(/[eE]/);
  const mantissa = exponentAt < 0 ? literal : literal.slice(0, exponentAt);
  let digits = '';
  for (let k = 0; k < mantissa.length; k++) {
    const c = mantissa.charCodeAt(k);
    if (c >= 0x30 && c <= 0x39) digits += mantissa[k];
  }
  let from = 0;
  while (from < digits.length && digits.charCodeAt(from) === 0x30) from++;
  let to = digits.length;
  while (to > from && digits.charCodeAt(to - 1) === 0x30) to--;
  return digits.slice(from, to);
}

const quoted = (literal: string) => (literal.length > 40 ? `${literal.slice(0, 37)}...` : literal);

/** parseJsonWithin (json-limits.ts), and NOT_JSON too when parsing would change what the text says. */
export function parseExactJsonWithin(text: string): unknown {
  const parsed = parseJsonWithin(text);
  return parsed === NOT_JSON || inexactJsonIn(text, '') ? NOT_JSON : parsed;
}
