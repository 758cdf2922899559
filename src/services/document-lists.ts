// The agent and workflow lists a caller gets: the store's list of the workspace (its JSON, held by
// the store), narrowed to the spaces the caller sees (domain/spaces.ts) and to the request's space
// and folder filters, and paged by a keyset on the slug when the request gives a limit; and the
// folders of the agents a caller sees.
import { inFolder, RESERVED_TEAM, sees, type Team } from '../domain/spaces';
import type { ListVersion } from '../store/port';
import type { Principal } from './context';
import { decodeCursor } from './pages';

/** What a list item says of itself that a list request may narrow by. */
interface Placed {
  slug: string;
  space: { team: Team };
  folder?: string | null;
}

/** A list request: a space (`workspace`, or a team's slug), a folder prefix, a page. */
export interface ListRequest {
  space?: string;
  folder?: string;
  limit?: number;
  cursor?: string;
}

/** A list request from its query (as sent: the limit is text, checked by the spec's validation to be 1..500). */
export function listRequest(query: { space?: string; folder?: string; limit?: number | string; cursor?: string }): ListRequest {
  return { space: query.space, folder: query.folder, limit: query.limit === undefined ? undefined : Number(query.limit), cursor: query.cursor };
}

export interface ListPage {
  /** The reply's body: `data` and `next_cursor`. */
  body: string;
  nextCursor: string | null;
  /** What the body's bytes may be kept with (the store's list, while it holds it), when the body is its whole list. */
  stable?: object;
}

/** The items of a list the store holds, parsed once for as long as it holds it. */
const parsedLists = new WeakMap<ListVersion, Placed[]>();
/** The reply body of a list the store holds, shown whole. */
const wholeBodies = new WeakMap<ListVersion, string>();

function itemsOf(list: ListVersion): Placed[] {
  let items = parsedLists.get(list);
  if (!items) parsedLists.set(list, (items = JSON.parse(list.json) as Placed[]));
  return items;
}

/** The page of `list` that `who` sees and `request` asks for. */
export function listPage(list: ListVersion<Placed[]>, who: Principal, request: ListRequest): ListPage {
  // Nothing to narrow (no filter, no page, and no team's document or an administrator): the store's
  // list as it is. A team appears in its JSON as `"team":"…"`; a name holding those characters has
  // its quotes escaped.
  const narrowed = request.space !== undefined || request.folder !== undefined || request.limit !== undefined || request.cursor !== undefined;
  if (!narrowed && (who.admin || !list.json.includes('"team":"'))) {
    let body = wholeBodies.get(list);
    if (body === undefined) wholeBodies.set(list, (body = `{"data":${list.json},"next_cursor":null}`));
    return { body, nextCursor: null, stable: list };
  }
  const team = request.space === undefined ? undefined : request.space === RESERVED_TEAM ? null : request.space;
  const after = request.cursor === undefined ? undefined : decodeCursor(request.cursor, ({ slug }) => (typeof slug === 'string' ? slug : undefined));
  const shown: Placed[] = [];
  let more = false;
  for (const item of itemsOf(list)) {
    if (after !== undefined && item.slug <= after) continue;
    if (!sees(who, item.space.team) || (team !== undefined && item.space.team !== team)) continue;
    if (request.folder !== undefined && !inFolder(item.folder ?? null, request.folder)) continue;
    if (request.limit !== undefined && shown.length === request.limit) {
      more = true;
      break;
    }
    shown.push(item);
  }
  const last = shown[shown.length - 1];
  const nextCursor = more && last ? Buffer.from(JSON.stringify({ slug: last.slug })).toString('base64url') : null;
  return { body: JSON.stringify({ data: shown, next_cursor: nextCursor }), nextCursor };
}

/** How many levels of folders above an agent's own are listed (its own path always is). */
export const MAX_FOLDER_DEPTH = 16;

export interface Folder {
  space: { team: Team };
  path: string;
  agents: number;
}

/**
 * The folders of the agents of `list` that `who` sees (of one space, with `space`): each path that
 * holds an agent, and each path above one, with the agents in it or below it; ordered by space (the
 * workspace's first) and path.
 */
export function foldersOf(list: ListVersion<Placed[]>, who: Principal, space?: string): Folder[] {
  const team = space === undefined ? undefined : space === RESERVED_TEAM ? null : space;
  const counts = new Map<string, Folder>();
  for (const item of itemsOf(list)) {
    if (!item.folder || !sees(who, item.space.team) || (team !== undefined && item.space.team !== team)) continue;
    // Its own path, and those above it up to MAX_FOLDER_DEPTH segments: a path of a thousand
    // segments costs no more than one of MAX_FOLDER_DEPTH (each prefix is a copy).
    const ends: number[] = [];
    for (let at = item.folder.indexOf('/'); at >= 0 && ends.length < MAX_FOLDER_DEPTH - 1; at = item.folder.indexOf('/', at + 1)) ends.push(at);
    ends.push(item.folder.length);
    for (const end of new Set(ends)) {
      const path = item.folder.slice(0, end);
      const key = `${item.space.team ?? ''}\n${path}`;
      const folder = counts.get(key);
      if (folder) folder.agents++;
      else counts.set(key, { space: { team: item.space.team }, path, agents: 1 });
    }
  }
  const order = (f: Folder) => `${f.space.team === null ? '0' : `1${f.space.team}`}\n${f.path}`;
  return [...counts.values()].sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
}
