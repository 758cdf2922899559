// What both adapters decide alike about a document write: the stored version's object, the
// stamped JSON that is stored, the slug a create takes and the size it may have. The adapters run
// the statements; these decide.
import { firstFreeSlug } from '../../domain/agent';
import { formatStamp } from '../../domain/stamps';
import type { CreateOptions, CreateOutcome, DocumentRecord, Serialized } from '../port';

/** A document's row as both stores keep it (PostgreSQL's too: postgres/documents.ts). */
export interface DocumentRow {
  id: string;
  workspace_id: string;
  slug: string;
  version: number;
  stamp_us: number;
  document: string;
}

/**
 * One stored version of a document. The row cache holds these, so the parse of the document and
 * the text of its stamp are done once per version, not once per request.
 */
export class StoredVersion<T> implements DocumentRecord<T> {
  private parsed: T | undefined;
  private stampText: string | undefined;

  constructor(
    readonly id: string,
    readonly workspaceId: string,
    readonly slug: string,
    readonly version: number,
    readonly stampMicros: number,
    readonly json: Serialized<T>,
    parsed?: T,
  ) {
    this.parsed = parsed;
  }

  get document(): T {
    return (this.parsed ??= JSON.parse(this.json) as T);
  }

  get updatedAt(): string {
    return (this.stampText ??= formatStamp(this.stampMicros));
  }
}

/**
 * How a kind's document carries what its store decides: the member that holds its slug (`slug`; a
 * skill's `name`, its identity) and whether it carries its own `version` (skills do).
 */
export interface DocumentShape {
  identity: 'slug' | 'name';
  carriesVersion: boolean;
}

/** Agents and workflows: a `slug`, and a version only the write result tells. */
export const SLUGGED: DocumentShape = { identity: 'slug', carriesVersion: false };

/** The slug a document asks for (its identity member). */
export const wantedSlug = (doc: unknown, shape: DocumentShape = SLUGGED): string => (doc as Record<string, string>)[shape.identity] as string;

/** Stamps the document and serialises it; the stamp is the document's own `updated_at`. */
export function stamped<T>(doc: T, stampMicros: number, slug: string, version = 1, shape: DocumentShape = SLUGGED): { doc: T; json: Serialized<T> } {
  // Documents always have these members (normalised, or read back): spreading keeps their order.
  const final = shape.carriesVersion
    ? { ...doc, [shape.identity]: slug, version, updated_at: formatStamp(stampMicros) }
    : { ...doc, [shape.identity]: slug, updated_at: formatStamp(stampMicros) };
  return { doc: final, json: JSON.stringify(final) as Serialized<T> };
}

/**
 * The slug a create takes, or why none, in this order: the workspace's limit, then the slug (made
 * unique from `wanted` with `deriveSlug`, else refused when taken). `taken` answers from the rows
 * the adapter read in the write's transaction.
 */
export function chooseSlug(
  count: number,
  wanted: string,
  opts: CreateOptions,
  maxSlugLength: number,
  taken: (slug: string) => boolean,
): string | 'limit_reached' | 'slug_taken' {
  if (count >= opts.limit) return 'limit_reached';
  if (opts.deriveSlug) return firstFreeSlug(wanted, taken, maxSlugLength);
  return taken(wanted) ? 'slug_taken' : wanted;
}

/**
 * The version a create stores, or `too_large`: the caller measured the document with the slug it
 * asked for, and a derived slug's suffix may add a few bytes.
 */
export function newVersion<T>(
  workspaceId: string,
  id: string,
  doc: T,
  slug: string,
  stampMicros: number,
  opts: CreateOptions,
  shape: DocumentShape = SLUGGED,
): StoredVersion<T> | Extract<CreateOutcome<T>, { reason: 'too_large' }> {
  const { doc: final, json } = stamped(doc, stampMicros, slug, 1, shape);
  const bytes = Buffer.byteLength(json);
  if (opts.maxBytes !== undefined && bytes > opts.maxBytes) return { ok: false, reason: 'too_large', bytes };
  return new StoredVersion(id, workspaceId, slug, 1, stampMicros, json, final);
}

/** The version a stored row holds. */
export function versionOfRow<T>(row: DocumentRow): StoredVersion<T> {
  return new StoredVersion<T>(row.id, row.workspace_id, row.slug, row.version, row.stamp_us, row.document as Serialized<T>);
}

/**
 * A document's name as its list shows it: as UTF-8, so a lone surrogate (which no database text
 * holds) becomes U+FFFD, on both stores alike. The document itself keeps the name as written.
 */
export const listedName = (name: string): string => Buffer.from(name, 'utf8').toString('utf8');
