// What a cache may do with a reply (Cache-Control), and conditional reads (If-None-Match → 304;
// RFC 9110 §13.1.2, RFC 9111). Every reply of the API is the caller's own: `private` throughout.
//   a read:               private, no-cache — kept, but revalidated each time (a 304 costs no body);
//   a kept version, named by document id (not slug, which a new document may take again):
//                         private, max-age=31536000, immutable — it never changes;
//   anything else:        no-store (writes, refusals, event streams have their own).
import crypto from 'node:crypto';

export const REVALIDATE = 'private, no-cache';
export const IMMUTABLE = 'private, max-age=31536000, immutable';
export const NO_STORE = 'no-store';

const VERSION_READS = new Set(['getAgentVersion', 'getWorkflowVersion']);
/** Reads whose replies carry no ETag of their own: theirs is a digest of the reply's bytes. */
const DIGESTED_READS = new Set(['getAgentRun', 'getWorkflowRun']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The Cache-Control of a successful reply to `operationId` (GET, or HEAD of it) with these path parameters. */
export function cacheControlOf(method: string, operationId: string, params: Record<string, string>): string {
  if (method !== 'GET' && method !== 'HEAD') return NO_STORE;
  if (VERSION_READS.has(operationId) && (UUID.test(params.ref ?? '') || (params.version ?? '').includes('@'))) return IMMUTABLE;
  return REVALIDATE;
}

/** Whether a read's reply is given a digest ETag (a run's projection changes without a stamp of its own). */
export const digestedRead = (operationId: string): boolean => DIGESTED_READS.has(operationId);

/** A strong entity tag of exactly these bytes. */
export function digestTag(bytes: Buffer): string {
  return `"${crypto.hash('sha256', bytes, 'base64url').slice(0, 27)}"`;
}

/**
 * Whether If-None-Match names the current representation (`*`, or a tag equal to `etag` by weak
 * comparison: `W/` aside, the quoted text is the same). Read in one pass: the header is a list of
 * quoted tags separated by commas.
 */
export function matchesNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const wanted = opaque(etag);
  for (const item of header.split(',')) if (opaque(item.trim()) === wanted) return true;
  return false;
}

const opaque = (tag: string) => (tag.startsWith('W/') ? tag.slice(2) : tag);
