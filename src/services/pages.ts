// What the paged lists share (the run lists, the version lists): the page as JSON text, the opaque
// cursor (base64url JSON of where the next page starts), and the one row more than shown that the
// store reads to tell whether a next page exists.
import { badRequest } from '../errors';
import type { Serialized } from '../store/port';

export const DEFAULT_PAGE = 20;

export interface Page<T> {
  /** The page's JSON: `data` and `next_cursor`. */
  json: Serialized<T>;
  nextCursor: string | null;
}

/** The opaque cursor of a position: base64url JSON. */
export function encodeCursor(position: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

/** Where `cursor` says the next page starts, as `read` takes it from the position (undefined: not a cursor of this list, 400). */
export function decodeCursor<V>(cursor: string, read: (position: Record<string, unknown>) => V | undefined): V {
  try {
    const position = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    const value = typeof position === 'object' && position !== null ? read(position as Record<string, unknown>) : undefined;
    if (value !== undefined) return value;
  } catch {
    // falls through to the 400
  }
  throw badRequest('cursor: not a cursor of this list; pass the next_cursor of the previous page as it was given');
}

/**
 * The page of the first `limit` of `rows` (read with one more: a next page exists when it came),
 * each shown as `item` makes its JSON; the next page starts after the last shown (`positionOf`).
 */
export function pageOf<R, T>(rows: R[], limit: number, item: (row: R) => string, positionOf: (last: R) => Record<string, unknown>): Page<T> {
  const shown = rows.slice(0, limit);
  const last = shown[shown.length - 1];
  return pageOfItems(shown.map(item), rows.length > limit && last !== undefined ? positionOf(last) : null);
}

/**
 * The page whose items' JSON, in order, `items` holds (each may be several items joined by commas);
 * `next`: where the next page starts (null: this is the last page).
 */
export function pageOfItems<T>(items: string[], next: Record<string, unknown> | null): Page<T> {
  const nextCursor = next && encodeCursor(next);
  // Joined into one new string: a page that is held keeps none of the strings it was made from (the
  // runs' text, version-pages.ts) alive.
  return { json: ['{"data":[', items.join(','), `],"next_cursor":${JSON.stringify(nextCursor)}}`].join('') as Serialized<T>, nextCursor };
}
