// The one-pass check of what JSON.parse would change: examples of each rule, then properties: any
// value a JSON encoder writes passes and parses back equal; a value with one inexact thing put at a
// random place is refused, naming that place.
import fc from 'fast-check';
import { inexactJsonIn, inexactNumber, parseExactJsonWithin } from '../../src/domain/json-exact';
import { NOT_JSON, refusedTextIn } from '../../src/domain/json-limits';

const refusal = (text: string) => inexactJsonIn(text, 'body');

describe('numbers', () => {
  test.each([
    '0',
    '-0',
    '0.0',
    '0e400',
    '-0.000e-999',
    '1',
    '-1',
    '0.1',
    '0.30000000000000004',
    '1.5e300',
    '1.7976931348623157e308',
    '5e-324',
    '2.2250738585072014e-308',
    '9007199254740991',
    '-9007199254740991',
    '9007199254740992.0',
    '1e21',
    '1E+21',
    '123456789012345',
    '100000000000000000000.0',
    '0.000001',
    '1e-7',
    '12.50000000000000000000',
  ])('%s is held exactly', (literal) => {
    expect(inexactNumber(literal)).toBeNull();
  });

  test.each([
    ['12345678901234567890', /is an integer beyond ±9007199254740991/],
    ['9007199254740992', /is an integer beyond/],
    ['-9007199254740993', /is an integer beyond/],
    ['1e400', /is beyond the range of a double/],
    ['-1.8e308', /is beyond the range of a double/],
    ['1e-400', /would become 0/],
    ['-2e-324', /would become 0/],
    ['12345678901234567890.5', /more significant digits than a double keeps: it would be stored as 12345678901234567000/],
    ['0.30000000000000001', /it would be stored as 0.3/],
    ['3.141592653589793238462643383279', /more significant digits/],
    ['1.0000000000000000000001e5', /more significant digits/],
  ])('%s is refused', (literal, rule) => {
    expect(inexactNumber(literal)).toMatch(rule);
  });

  test('a very long literal is quoted shortened', () => {
    expect(inexactNumber(`1${'0'.repeat(400)}`)).toBe(`1${'0'.repeat(36)}... is beyond the range of a double (±1.7976931348623157e308)`);
  });
});

describe('paths', () => {
  test('a number is named where it is, in objects and arrays, under odd member names', () => {
    expect(refusal('{"args":{"big":12345678901234567890}}')?.path).toBe('body.args.big');
    expect(refusal('[1, 2, {"a b": [0, 1e400]}]')?.path).toBe('body[2]["a b"][1]');
    expect(refusal('{"a\\"b": {"c": [[], {}, 1e-400]}}')?.path).toBe('body["a\\"b"].c[2]');
    expect(refusal('1e400')?.path).toBe('body');
  });

  test('strings that look like numbers, names or brackets are only strings', () => {
    expect(refusal('{"a": "1e400", "b": "{\\"a\\":1,\\"a\\":2}", "c": "\\\\", "d": ["[", "]", ","]}')).toBeNull();
  });

  test('a repeated member name is refused at its second occurrence, however escaped, at any depth', () => {
    expect(refusal('{"approval":"write","approval":"destructive"}')).toEqual({
      path: 'body.approval',
      rule: 'is a duplicate member name (each member may appear once in an object, as RFC 7493 requires)',
    });
    expect(refusal('{"a":{"x":1,"y":{"x":1}},"b":[{"k":1,"j":2,"\\u006b":3}]}')?.path).toBe('body.b[0].k');
    const deep = `${'{"n":'.repeat(60)}{"z":1,"y":2,"z":3}${'}'.repeat(60)}`;
    expect(refusal(deep)?.path).toBe(`body${'.n'.repeat(60)}.z`);
  });

  test('the same name in sibling objects is no repetition', () => {
    expect(refusal('[{"a":1},{"a":1}]')).toBeNull();
    expect(refusal('{"a":{"a":{"a":1}}}')).toBeNull();
  });
});

test('parseExactJsonWithin: NOT_JSON for text that is not JSON or that parsing would change', () => {
  expect(parseExactJsonWithin('{"a":1}')).toEqual({ a: 1 });
  expect(parseExactJsonWithin('{"a":1,"a":2}')).toBe(NOT_JSON);
  expect(parseExactJsonWithin('{"id":12345678901234567890}')).toBe(NOT_JSON);
  expect(parseExactJsonWithin('{"a":')).toBe(NOT_JSON);
});

test('lone surrogates are named where they are, in strings and member names; pairs pass', () => {
  expect(refusedTextIn(JSON.parse('{"name":"lone\\ud800x"}'), 'body')?.path).toBe('body.name');
  expect(refusedTextIn(JSON.parse('{"a":{"\\udfffk":1}}'), 'body')?.path).toBe('body.a["\\udfffk"]');
  expect(refusedTextIn(JSON.parse('{"a":["\\ud83d\\ude00", "😀"]}'), 'body')).toBeNull();
});

// What any JSON encoder writes: doubles (shortest round trip), well-formed strings, unique names;
// less the integers beyond 2^53−1, which are refused however written (a client sends them as strings),
// and members named __proto__, refused too.
const hasBigInteger = (value: unknown): boolean =>
  typeof value === 'number'
    ? Number.isInteger(value) && Math.abs(value) > Number.MAX_SAFE_INTEGER && Math.abs(value) < 1e21
    : value !== null && typeof value === 'object' && Object.values(value).some(hasBigInteger);
const exactValue = fc
  .jsonValue({ maxDepth: 4, stringUnit: 'grapheme' })
  .filter((value) => !hasBigInteger(value) && !JSON.stringify(value).includes('"__proto__":'));

test('property: whatever JSON.stringify writes passes, and parses back to the same value', () => {
  fc.assert(
    fc.property(exactValue, (value) => {
      const text = JSON.stringify(value);
      expect(refusal(text)).toBeNull();
      expect(refusedTextIn(JSON.parse(text), 'body')).toBeNull();
      expect(JSON.stringify(JSON.parse(text))).toBe(text);
    }),
    { numRuns: 2000 },
  );
});

// A place in a value, as the path names it, and the text of the value with `inexact` put there.
const inexactLiteral = fc.constantFrom('12345678901234567890', '1e400', '-1e-400', '0.30000000000000001');
const container = fc.dictionary(fc.string({ minLength: 1, maxLength: 6, unit: 'grapheme' }), exactValue, { minKeys: 1, maxKeys: 4 });

test('property: one inexact number or repeated name put anywhere is refused, naming that place', () => {
  fc.assert(
    fc.property(container, fc.array(fc.nat(), { maxLength: 4 }), inexactLiteral, fc.boolean(), (root, steps, literal, repeat) => {
      // Walk down through objects and arrays by the random steps, then put the inexact thing there.
      const marker = JSON.stringify('\u0001marker');
      let node: unknown = root;
      let path = 'body';
      for (const step of steps) {
        if (Array.isArray(node) && node.length) {
          const i = step % node.length;
          if (typeof node[i] !== 'object' || node[i] === null) break;
          path += `[${i}]`;
          node = node[i];
        } else if (node && typeof node === 'object' && !Array.isArray(node) && Object.keys(node).length) {
          const keys = Object.keys(node);
          const key = keys[step % keys.length]!;
          const child = (node as Record<string, unknown>)[key];
          if (typeof child !== 'object' || child === null) break;
          path = refusedPath(path, key);
          node = child;
        } else break;
      }
      let text: string;
      if (repeat && node && typeof node === 'object' && !Array.isArray(node) && Object.keys(node).length) {
        const key = Object.keys(node)[0]!;
        (node as Record<string, unknown>)['\u0001marker'] = 0;
        text = JSON.stringify(root).replace(`${marker}:0`, () => `${JSON.stringify(key)}:0`);
        path = refusedPath(path, key);
      } else if (Array.isArray(node)) {
        node.push('\u0001marker');
        text = JSON.stringify(root).replace(marker, () => literal);
        path += `[${node.length - 1}]`;
      } else {
        (node as Record<string, unknown>)['\u0001marker'] = '\u0001marker';
        text = JSON.stringify(root).replace(`:${marker}`, () => `:${literal}`);
        path = refusedPath(path, '\u0001marker');
      }
      expect(refusal(text)?.path).toBe(path);
    }),
    { numRuns: 2000 },
  );
});

const refusedPath = (base: string, key: string) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`);
