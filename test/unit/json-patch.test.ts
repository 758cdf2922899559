// A version diff's patch (domain/json-patch.ts) applies with libraries that refuse paths through
// __proto__, constructor or prototype: rfc6902 refuses them; the patch must still give the target
// exactly, with rfc6902 and with fast-json-patch. (No document holds a member named __proto__: every
// request body is refused one, http/body.ts.)
import { applyPatch as applyWithFastJsonPatch, compare } from 'fast-json-patch';
import { applyPatch as applyWithRfc6902 } from 'rfc6902';
import { applicableEverywhere } from '../../src/domain/json-patch';
import type { JsonPatchOperation } from '../../src/domain/types';

const doc = (json: string) => JSON.parse(json) as Record<string, unknown>;

function diff(from: Record<string, unknown>, to: Record<string, unknown>) {
  return applicableEverywhere(compare(from, to) as JsonPatchOperation[], to);
}

const cases: [string, string, string][] = [
  [
    'a member of a guarded member changes',
    '{"steps":[{"args":{"constructor":{"x":1},"y":1}}],"name":"a"}',
    '{"steps":[{"args":{"constructor":{"x":2},"y":2}}],"name":"b"}',
  ],
  ['a guarded member is added', '{"steps":[{"args":{"y":1}}]}', '{"steps":[{"args":{"y":1,"constructor":{"polluted":true}}}]}'],
  ['a guarded member is removed', '{"steps":[{"args":{"prototype":[1,2],"y":1}}]}', '{"steps":[{"args":{"y":1}}]}'],
  [
    'guarded members nested in each other, and a step removed after',
    '{"steps":[{"args":{"a":{"prototype":{"constructor":1}}}},{"args":{}},{"args":{}}]}',
    '{"steps":[{"args":{"a":{"prototype":{"constructor":2}}}},{"args":{"prototype":3}}]}',
  ],
  [
    'guarded members in several steps, items added',
    '{"steps":[{"args":{"constructor":1}},{"args":{"constructor":1}}]}',
    '{"steps":[{"args":{"constructor":2}},{"args":{"constructor":3}},{"args":{"constructor":4}}]}',
  ],
];

test.each(cases)('%s: no path goes through a guarded member, and both libraries give the target exactly', (_name, fromJson, toJson) => {
  const patch = diff(doc(fromJson), doc(toJson));
  for (const op of patch) for (const token of op.path.split('/')) expect(['__proto__', 'constructor', 'prototype']).not.toContain(token);
  const byRfc6902 = doc(fromJson);
  expect(applyWithRfc6902(byRfc6902, structuredClone(patch) as never)).toEqual(patch.map(() => null));
  expect(byRfc6902).toEqual(doc(toJson));
  expect(JSON.stringify(byRfc6902)).toBe(JSON.stringify(doc(toJson)));
  const byFastJsonPatch = applyWithFastJsonPatch(doc(fromJson), structuredClone(patch) as never, true, false).newDocument;
  expect(JSON.stringify(byFastJsonPatch)).toBe(JSON.stringify(doc(toJson)));
});

test('without guarded members the patch is the comparison, operation by operation', () => {
  const from = doc('{"steps":[{"args":{"a/b":1,"c~d":2}}],"name":"a"}');
  const to = doc('{"steps":[{"args":{"a/b":3}},{"args":{}}],"name":"b"}');
  expect(diff(from, to)).toEqual(compare(from, to));
});

test('the operations outside the replaced object stay, in their order', () => {
  const patch = diff(doc('{"a":1,"steps":[{"args":{"constructor":1,"b":1}}],"z":1}'), doc('{"a":2,"steps":[{"args":{"constructor":2,"b":2}}],"z":2}'));
  expect(patch.filter((op) => op.path.startsWith('/steps'))).toEqual([{ op: 'replace', path: '/steps/0/args', value: doc('{"constructor":2,"b":2}') }]);
  expect(patch.map((op) => op.path).filter((p) => !p.startsWith('/steps'))).toEqual(compare(doc('{"a":1,"z":1}'), doc('{"a":2,"z":2}')).map((op) => op.path));
});
