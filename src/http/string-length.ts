// JSON Schema's maxLength/minLength count code points; ajv counts them with a JavaScript loop over
// every UTF-16 unit of the string, on every write and validation of an agent's long instructions.
// A string without a high surrogate — nearly every string — has as many code points as units,
// which a native regex scan finds out far faster than that loop counts (docs/benchmarks.md); any
// other string is counted by ajv's own loop, so the result is always the same.
import ucs2length from 'ajv/dist/runtime/ucs2length';

const HIGH_SURROGATE = /[\uD800-\uDBFF]/;
const countByLoop = ucs2length as unknown as { (text: string): number; code: string };

export function codePointLength(text: string): number {
  return HIGH_SURROGATE.test(text) ? countByLoop(text) : text.length;
}
codePointLength.code = countByLoop.code; // what standalone validator code would require instead

/**
 * Makes ajv's length keywords use codePointLength. ajv looks the function up when it compiles a
 * schema (vocabularies/validation/limitLength), so this must run before the first compile.
 */
export function useFastStringLength(): void {
  const runtime = require('ajv/dist/runtime/ucs2length') as { default: unknown };
  runtime.default = codePointLength;
}
