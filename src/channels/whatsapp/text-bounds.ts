// Lengths as WhatsApp and this API count them: in characters (code points), so that an emoji is
// one and a cut never leaves half of a surrogate pair behind. Each stops counting at the bound.

/** How many UTF-16 units the character at `i` takes: 2 for a surrogate pair, else 1 (a lone surrogate too). */
function unitsAt(text: string, i: number): number {
  const unit = text.charCodeAt(i);
  return unit >= 0xd800 && unit <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
}

/** The UTF-16 length of `text`'s first `max` characters (all of it when it has fewer). */
function unitsOfFirst(text: string, max: number): number {
  let i = 0;
  for (let points = 0; i < text.length && points < max; points++) i += unitsAt(text, i);
  return i;
}

/** Whether `text` has more than `max` code points. */
export function longerThan(text: string, max: number): boolean {
  // Never more code points than UTF-16 units: the common case is decided without counting.
  return text.length > max && unitsOfFirst(text, max) < text.length;
}

/** `text` cut to at most `max` code points, a surrogate pair kept whole or dropped whole. */
export function cutToCharacters(text: string, max: number): string {
  return text.length > max ? text.slice(0, unitsOfFirst(text, max)) : text;
}
