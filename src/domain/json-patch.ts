// A JSON Patch (RFC 6902) that every RFC 6902 library applies. Some libraries (rfc6902, for one)
// refuse a path through a member named __proto__, constructor or prototype, a guard against
// prototype pollution, yet a document's free-form objects (a step's `args`) may have members of
// those names. So every operation inside the object that holds such a member becomes one `replace`
// of that object by its value in the target document, in the place of the first of them.
import type { JsonPatchOperation } from './types';

const GUARDED = new Set(['__proto__', 'constructor', 'prototype']);

/** A pointer's reference tokens, unescaped (`~1` is `/`, `~0` is `~`). */
const tokensOf = (pointer: string) =>
  pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));

/**
 * `patch` (made by comparing member by member and item by item, so that a pointer names the same
 * place before and after it applies) with its operations through guarded members folded into
 * replaces of the objects holding them; `target` is the document the patch gives.
 */
export function applicableEverywhere(patch: JsonPatchOperation[], target: unknown): JsonPatchOperation[] {
  const holders = new Set<string>();
  for (const op of patch) {
    const tokens = op.path.split('/');
    const guarded = tokens.findIndex((t, i) => i > 0 && GUARDED.has(t)); // no escape sequence spells one of them
    if (guarded > 0) holders.add(tokens.slice(0, guarded).join('/'));
  }
  if (!holders.size) return patch;
  const folded: JsonPatchOperation[] = [];
  const replaced = new Set<string>();
  for (const op of patch) {
    const holder = outermostHolder(op.path, holders);
    if (holder === null) folded.push(op);
    else if (!replaced.has(holder)) {
      replaced.add(holder);
      folded.push({ op: 'replace', path: holder, value: valueAt(target, holder) });
    }
  }
  return folded;
}

/** The shortest of `holders` that is `path` or holds it, or null. */
function outermostHolder(path: string, holders: Set<string>): string | null {
  if (holders.has('')) return '';
  for (let end = path.indexOf('/', 1); ; end = path.indexOf('/', end + 1)) {
    const prefix = end < 0 ? path : path.slice(0, end);
    if (holders.has(prefix)) return prefix;
    if (end < 0) return null;
  }
}

/** The value `pointer` names in `document` (it exists: an operation reached through it). */
function valueAt(document: unknown, pointer: string): unknown {
  let value = document;
  for (const token of tokensOf(pointer)) value = Object.hasOwn(value as object, token) ? (value as Record<string, unknown>)[token] : undefined;
  return value;
}
