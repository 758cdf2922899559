// Trimming a character from the ends of a text by hand: the regexes this replaces (`/-+$/`,
// `/\/+$/`) are quadratic on a long run of the character followed by something else, as the
// engine retries the run from each of its positions.

/** `text` without `ch` repeated at its end. */
export function trimEnd(text: string, ch: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === ch) end--;
  return text.slice(0, end);
}

/** `text` without `ch` repeated at either end. */
export function trimBoth(text: string, ch: string): string {
  let start = 0;
  while (start < text.length && text[start] === ch) start++;
  return trimEnd(text.slice(start), ch);
}
