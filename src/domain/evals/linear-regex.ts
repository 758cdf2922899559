// Regular expressions over a tenant's text, matched in linear time by RE2's automata (re2js, a pure
// JavaScript port of RE2): a `regex` check, and the `pattern`s of a `json_schema` check. JavaScript's
// own engine backtracks, so a pattern such as `(a+)+$` takes exponential time on a long run of `a`s;
// RE2 has no backreferences or lookaround, and a pattern that needs them is refused at write time.
import { RE2JS } from 're2js';

/** A compiled pattern: whether it matches somewhere in a text. */
export interface LinearRegex {
  test(text: string): boolean;
}

/** The pattern compiled, or why RE2 cannot take it. */
export function compileLinear(pattern: string, ignoreCase = false): LinearRegex | { problem: string } {
  try {
    const compiled = RE2JS.compile(pattern, ignoreCase ? RE2JS.CASE_INSENSITIVE : 0);
    return { test: (text) => compiled.matcher(text).find() };
  } catch (err) {
    return { problem: `is not a pattern the linear-time engine takes (RE2 syntax: no backreferences or lookaround): ${(err as Error).message}` };
  }
}
