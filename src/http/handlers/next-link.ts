// The `Link` header of a paged list (the run lists, the version lists).
import querystring from 'node:querystring';

/** `Link: <path?query with the next cursor>; rel="next"`, when there is a next page. */
export function nextLink(path: string, query: Record<string, unknown>, nextCursor: string | null): Record<string, string> | undefined {
  if (nextCursor === null) return undefined;
  return { Link: `<${path}?${querystring.stringify({ ...(query as querystring.ParsedUrlQueryInput), cursor: nextCursor })}>; rel="next"` };
}
