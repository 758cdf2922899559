import Ajv from 'ajv';
import ucs2length from 'ajv/dist/runtime/ucs2length';
import { codePointLength, useFastStringLength } from '../../src/http/string-length';

const samples = ['', 'plain ascii', 'é and ü', '😀', 'a😀b😀', '\uD83D', 'x\uD83Dy', '\uDE00', '\uDE00\uD83D', 'abc\uD83D'];

test('counts code points exactly as ajv does, lone surrogates included', () => {
  for (const text of samples) expect(codePointLength(text)).toBe((ucs2length as unknown as (s: string) => number)(text));
  expect(codePointLength('😀😀')).toBe(2);
  expect(codePointLength('x'.repeat(6500))).toBe(6500);
});

test('ajv schemas compiled after useFastStringLength count code points in maxLength and minLength', () => {
  useFastStringLength();
  expect((require('ajv/dist/runtime/ucs2length') as { default: unknown }).default).toBe(codePointLength);
  const ajv = new Ajv();
  const max2 = ajv.compile({ type: 'string', maxLength: 2 });
  const min2 = ajv.compile({ type: 'string', minLength: 2 });
  expect(max2('😀😀')).toBe(true); // four UTF-16 units, two code points
  expect(max2('😀😀😀')).toBe(false);
  expect(min2('😀')).toBe(false);
  expect(min2('ab')).toBe(true);
});
