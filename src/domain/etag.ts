// Entity tags: the ETag of a document is its updated_at in double quotes (a strong tag). If-Match
// takes `*` or a list of tags (RFC 9110 §13.1.1); weak tags never match under strong comparison.

export function etagFor(stamp: string): string {
  return `"${stamp}"`;
}

export type IfMatch = { any: true } | { any: false; tags: string[] };

export function parseIfMatch(header: string): IfMatch | null {
  const value = header.trim();
  if (value === '*') return { any: true };
  const tags: string[] = [];
  const re = /\s*(W\/)?"([^"]*)"\s*(,|$)/y;
  let pos = 0;
  while (pos < value.length) {
    re.lastIndex = pos;
    const m = re.exec(value);
    if (!m) return null;
    if (!m[1]) tags.push(m[2] as string);
    pos = re.lastIndex;
  }
  return { any: false, tags };
}

/** Whether If-Match admits the stored stamp; `sameInstant` decides how two stamps compare. */
export function ifMatchAdmits(ifMatch: IfMatch, stamp: string, sameInstant: (a: string, b: string) => boolean): boolean {
  return ifMatch.any || ifMatch.tags.some((tag) => sameInstant(tag, stamp));
}
