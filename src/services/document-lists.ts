// The agent and workflow lists a caller gets: the store's list of the workspace (its JSON, held by
// the store), narrowed to the spaces the caller sees (domain/spaces.ts) and to the request's space
// and folder filters.
import { inFolder, RESERVED_TEAM, sees } from '../domain/spaces';
import type { ListVersion } from '../store/port';
import type { Principal } from './context';

/** What a list item says of where it lives. */
interface Placed {
  space: { team: string | null };
  folder?: string | null;
}

/** A list request's filters: a space (`workspace`, or a team's slug) and a folder prefix. */
export interface ListFilter {
  space?: string;
  folder?: string;
}

/** The items of a list the store holds, parsed once for as long as it holds it. */
const parsedLists = new WeakMap<ListVersion, Placed[]>();

/** The part of `list` that `who` sees and `filter` asks for. */
export function visibleList<T extends Placed>(list: ListVersion<T[]>, who: Principal, filter: ListFilter): ListVersion<T[]> {
  // Nothing to narrow (no filter, and no team's document, or an administrator): the store's bytes as
  // they are. A team appears in the JSON as `"team":"…"`; a name holding those characters has its
  // quotes escaped.
  if (filter.space === undefined && filter.folder === undefined && (who.admin || !list.json.includes('"team":"'))) return list;
  let items = parsedLists.get(list);
  if (!items) parsedLists.set(list, (items = JSON.parse(list.json) as Placed[]));
  const team = filter.space === undefined ? undefined : filter.space === RESERVED_TEAM ? null : filter.space;
  const shown = items.filter(
    (item) =>
      sees(who, item.space.team) &&
      (team === undefined || item.space.team === team) &&
      (filter.folder === undefined || inFolder(item.folder ?? null, filter.folder)),
  );
  return { json: JSON.stringify(shown) } as ListVersion<T[]>;
}
