// Checks of JSON values a tenant sent or a run made, each without recursion (a value nested
// thousands deep must not overflow the stack) and in time bounded by the value or the limit:
//   jsonBytesWithin  its size as text, measured without writing the text and given up as soon as it
//                    passes a limit (a value that shares one object many times can be small in
//                    memory and huge as text);
//   exceedsDepth     whether it nests deeper than a limit (parseJsonWithin: JSON text, unless deeper);
//   refusedTextIn    where it holds U+0000, which PostgreSQL's text cannot store (withoutNul
//                    replaces it in texts a run writes), or a member named __proto__.

/** UTF-8 bytes of `value` as JSON (escapes inside strings not counted), or null when over `limit`. */
export function jsonBytesWithin(value: unknown, limit: number): number | null {
  let total = 0;
  const pending: unknown[] = [value];
  while (pending.length) {
    const v = pending.pop();
    if (typeof v === 'string') total += Buffer.byteLength(v) + 2;
    else if (typeof v === 'number' || typeof v === 'boolean') total += String(v).length;
    else if (v === null || v === undefined) total += 4;
    else if (Array.isArray(v)) {
      total += 2 + Math.max(0, v.length - 1);
      // A huge array of small members: its members are counted one by one, but never more than fit.
      if (total + v.length > limit) return null;
      for (let i = v.length - 1; i >= 0; i--) pending.push(v[i]);
    } else if (typeof v === 'object') {
      const keys = Object.keys(v);
      total += 2 + Math.max(0, keys.length - 1);
      if (total + keys.length * 4 > limit) return null;
      for (const key of keys) {
        total += Buffer.byteLength(key) + 3;
        pending.push((v as Record<string, unknown>)[key]);
      }
    } else total += 4; // functions and symbols: never in run data; counted as null
    if (total > limit) return null;
  }
  return total;
}

/** Deeper JSON is refused where a tenant sends it: no document needs it, and recursive code (serialisers, validators) must not meet it. */
export const JSON_DEPTH_LIMIT = 64;

/**
 * JSON text a tenant or a third party wrote (a webhook body, a response, a model's arguments),
 * parsed: or NOT_JSON when it is not JSON or nests deeper than JSON_DEPTH_LIMIT (callers then keep
 * the text, which recursive code cannot choke on).
 */
export const NOT_JSON: unique symbol = Symbol('not JSON');
export function parseJsonWithin(text: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
  return exceedsDepth(parsed, JSON_DEPTH_LIMIT) ? NOT_JSON : parsed;
}

/** Whether a JSON value nests objects and arrays deeper than `limit`. */
export function exceedsDepth(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (node === null || typeof node !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Object.values(node)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The path of member `key` below `base`, as errors name it: `base.key`, or `base["odd key"]`. */
export const memberPath = (base: string, key: string): string => (IDENTIFIER.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`);

/** Where a value holds what no request may carry, and the rule it breaks. */
export interface RefusedText {
  path: string;
  rule: string;
}

const NUL_RULE = 'must not contain the character U+0000 (NUL)';
// JSON.parse accepts an escaped half of a surrogate pair on its own (`"\ud800"`); no UTF-8 text can
// hold it, so each store would write something else (U+FFFD, or another key's bytes).
const SURROGATE_RULE = 'must not contain a lone surrogate (a \\uD800-\\uDFFF escape without its pair): the text must be valid Unicode';
// As fastify's JSON parser refuses it by default (secure-json-parse): a client or library that
// copies such a member by assignment sets the copy's prototype instead.
const PROTO_RULE = 'the member name __proto__ is refused (it names the prototype of every JavaScript object)';

/** Which of the rules refusedTextIn holds a value to. */
export interface TextRules {
  nul: boolean;
  proto: boolean;
}
/** What a request may not carry: every rule. */
const REQUEST_RULES: TextRules = { nul: true, proto: true };
/**
 * What no tool is given: a lone surrogate only. A run keeps U+0000 inside its JSON (withoutNul
 * replaces it where it becomes text), and a tool copies no member by assignment.
 */
export const TOOL_ARGUMENT_RULES: TextRules = { nul: false, proto: false };

/**
 * The first string or member name in `value` holding a lone surrogate, or (by `rules`) U+0000, or a
 * member named `__proto__`, with its path (`base.a[0].b`); or null.
 */
export function refusedTextIn(value: unknown, base: string, rules: TextRules = REQUEST_RULES): RefusedText | null {
  const stack: [unknown, string][] = [[value, base]];
  while (stack.length) {
    const [node, path] = stack.pop() as [unknown, string];
    if (typeof node === 'string') {
      if (rules.nul && node.includes('\u0000')) return { path, rule: NUL_RULE };
      if (!node.isWellFormed()) return { path, rule: SURROGATE_RULE };
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], `${path}[${i}]`]);
    } else if (node !== null && typeof node === 'object') {
      for (const [key, child] of Object.entries(node).reverse()) {
        const at = memberPath(path, key);
        if (rules.nul && key.includes('\u0000')) return { path: at, rule: NUL_RULE };
        if (!key.isWellFormed()) return { path: at, rule: SURROGATE_RULE };
        if (rules.proto && key === '__proto__') return { path: at, rule: PROTO_RULE };
        stack.push([child, at]);
      }
    }
  }
  return null;
}

/** Text a run made (an error quoting a response, say), as both stores keep it: U+0000 becomes U+FFFD. */
export const withoutNul = <T extends string | null>(text: T): T => (text === null ? text : (text.replaceAll('\u0000', '\uFFFD') as T));
