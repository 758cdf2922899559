// Characters as WhatsApp counts them (src/channels/whatsapp/text-bounds.ts): code points, a
// surrogate pair one character, never split by a cut.
import { cutToCharacters, longerThan } from '../../src/channels/whatsapp/text-bounds';

test('an emoji is one character; a lone surrogate is one too', () => {
  expect(longerThan('😀😀', 2)).toBe(false);
  expect(longerThan('😀😀😀', 2)).toBe(true);
  expect(longerThan('ab', 2)).toBe(false);
  expect(longerThan('abc', 2)).toBe(true);
  expect(longerThan('\uD83Da', 2)).toBe(false);
  expect(longerThan('a\uD83D', 1)).toBe(true);
  expect(longerThan('', 0)).toBe(false);
});

test('a cut keeps a surrogate pair whole and leaves a shorter text as it is', () => {
  expect(cutToCharacters('a😀b', 2)).toBe('a😀');
  expect(cutToCharacters('😀😀😀', 2)).toBe('😀😀');
  expect(cutToCharacters('abc', 5)).toBe('abc');
  expect(cutToCharacters('😀😀', 2)).toBe('😀😀');
  expect(cutToCharacters('ab\uD83D', 2)).toBe('ab');
  expect(cutToCharacters(`${'x'.repeat(4095)}😀`, 4096)).toBe(`${'x'.repeat(4095)}😀`);
});
