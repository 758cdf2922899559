// Pages of the workspace-wide lists (skills by name, eval datasets by slug): the whole list without
// `limit` and `cursor`, its reply body kept while the store holds the list; else a keyset page on
// the item's key, as document-lists.ts pages agents.
import type { ListVersion } from '../store/port';
import { decodeCursor, encodeCursor } from './pages';

/** Reply bodies of whole lists the store holds (no page asked). */
const wholeBodies = new WeakMap<ListVersion, string>();

export interface KeyedPage {
  body: string;
  nextCursor: string | null;
  /** What the body may be kept with (the store's list), when it is the whole list. */
  stable: object | undefined;
}

/** A page of `list`, whose items are ordered by `key` (a string member of each). */
export function keyedListPage<K extends string>(
  list: ListVersion<Record<K, string>[]>,
  key: K,
  query: { limit?: number | string; cursor?: string },
): KeyedPage {
  if (query.limit === undefined && query.cursor === undefined) {
    let body = wholeBodies.get(list);
    if (body === undefined) wholeBodies.set(list, (body = `{"data":${list.json},"next_cursor":null}`));
    return { body, nextCursor: null, stable: list as object };
  }
  const limit = query.limit === undefined ? Number.POSITIVE_INFINITY : Number(query.limit);
  const after =
    query.cursor === undefined ? undefined : decodeCursor(query.cursor, (cursor) => (typeof cursor[key] === 'string' ? (cursor[key] as string) : undefined));
  const items = (JSON.parse(list.json) as Record<K, string>[]).filter((item) => after === undefined || item[key] > after);
  const shown = items.slice(0, limit);
  const last = shown[shown.length - 1];
  const nextCursor = items.length > shown.length && last ? encodeCursor({ [key]: last[key] }) : null;
  return { body: JSON.stringify({ data: shown, next_cursor: nextCursor }), nextCursor, stable: undefined };
}
