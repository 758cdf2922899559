// Optimistic concurrency for replaces and status writes: If-Match and the body's updated_at must
// both name the stored stamp (rules 1 and 2 of the description). A mismatch is a 409 that carries the
// current document, so the caller can rebase; `applied` is empty because nothing was written.
import { ApiError, badRequest } from '../errors';
import { ifMatchAdmits, parseIfMatch } from '../domain/etag';
import { formatStamp, parseStampMicros } from '../domain/stamps';

export type StampRule = 'instant' | 'utc-only';

/** Agent stamps match by instant; workflow stamps must also be written in UTC (`Z`). */
export function sameStamp(rule: StampRule) {
  return (candidate: string, stored: string): boolean => {
    if (rule === 'utc-only' && !/[Zz]$/.test(candidate)) return false;
    const a = parseStampMicros(candidate);
    return a !== null && a === parseStampMicros(stored);
  };
}

export function staleConflict(message: string, current: unknown): ApiError {
  return new ApiError(409, message, { current, applied: [] });
}

/**
 * For a resource compared by its stamp alone (an app, a connection: no body stamp, and a 409 of the
 * one error shape): 400 for an unreadable If-Match, 409 when it names another stamp.
 */
export function assertStampCurrent(stampMicros: number, ifMatch: string, what: string): void {
  const current = formatStamp(stampMicros);
  const parsed = parseIfMatch(ifMatch);
  if (!parsed) throw badRequest(`If-Match: must be * or the quoted updated_at of your last read, e.g. "${current}"`);
  if (!ifMatchAdmits(parsed, current, sameStamp('instant'))) {
    throw new ApiError(409, `If-Match: ${ifMatch} is not the current stamp "${current}"; read the ${what} again and rebase your change`);
  }
}

/** Throws 400 for an unreadable If-Match and 409 (with `current`) when a stamp is not the stored one. */
export function assertStampsMatch(opts: { ifMatch: string; bodyStamp?: string; stored: { updated_at: string }; rule: StampRule }): void {
  const { stored, rule } = opts;
  const parsed = parseIfMatch(opts.ifMatch);
  if (!parsed) throw badRequest(`If-Match: must be * or the quoted updated_at of your last read, e.g. "${stored.updated_at}"`);
  const matches = sameStamp(rule);
  if (!ifMatchAdmits(parsed, stored.updated_at, matches)) {
    throw staleConflict(`If-Match: ${opts.ifMatch} is not the current stamp "${stored.updated_at}"; read the document again and rebase your change`, stored);
  }
  if (opts.bodyStamp !== undefined && !matches(opts.bodyStamp, stored.updated_at)) {
    throw staleConflict(
      `body.updated_at: "${opts.bodyStamp}" is not the current stamp "${stored.updated_at}"; read the document again and rebase your change`,
      stored,
    );
  }
}
