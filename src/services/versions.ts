// The kept versions of agents and workflows (each write keeps one: the store keeps it in the write's
// transaction): a document's versions paged newest first, one version read whole, two compared as
// an RFC 6902 JSON Patch. Restoring one is a replace (agents.ts, workflows.ts); running one is a
// run's (runs.ts). A version is named by its number or by its version id, `<document id>@<number>`,
// the form runs' `workflow_version_id` takes.
import { compare } from 'fast-json-patch';
import { applicableEverywhere } from '../domain/json-patch';
import { formatStamp } from '../domain/stamps';
import type { JsonPatchOperation } from '../domain/types';
import { badRequest, notFound } from '../errors';
import type { DocumentRecord, KeptVersion, Serialized, VersionEntry, VersionRepository } from '../store/port';
import { DEFAULT_PAGE, decodeCursor } from './pages';
import type { VersionPage, VersionPages, VersionRead } from './version-pages';

export interface VersionedKind<T> {
  /** 'agent' or 'workflow', in messages. */
  noun: string;
  versions: VersionRepository<T>;
}

/** The first of a restore's changes. */
export const restoredNote = (version: number) => `restored from version ${version}`;

export const versionId = (documentId: string, version: number) => `${documentId}@${version}`;

const DIGITS = /^[1-9][0-9]{0,8}$/;

/** The number `ref` names among `record`'s versions: a number, or a version id of this document (another's is 404). */
export function versionNumber(record: DocumentRecord<unknown>, ref: string | number, noun: string, param = 'version'): number {
  if (typeof ref === 'number') return ref;
  const at = ref.indexOf('@');
  const documentId = at < 0 ? record.id : ref.slice(0, at).toLowerCase();
  const digits = at < 0 ? ref : ref.slice(at + 1);
  if (!DIGITS.test(digits)) throw badRequest(`${param}: '${ref}' is neither a version number nor a version id (<${noun} id>@<number>)`);
  if (documentId !== record.id) throw notFound(`${param}: '${ref}' is not a version of ${noun} '${record.slug}'`);
  return Number(digits);
}

/** The kept version `ref` names, or 404. */
export async function keptVersion<T>(
  versions: VersionRepository<T>,
  record: DocumentRecord<T>,
  ref: string | number,
  noun: string,
  param?: string,
): Promise<KeptVersion<T>> {
  const number = versionNumber(record, ref, noun, param);
  const kept = await versions.get(record.id, number);
  if (!kept)
    throw notFound(
      `${param ?? 'version'}: ${noun} '${record.slug}' keeps no version ${number} (its versions are 1 to ${record.version}; older ones may have been pruned)`,
    );
  return kept;
}

/**
 * A page of versions, newest first, as the reply's JSON (each version's changes as stored), and the
 * cursor of the next page (null on the last). The first page starts at the version `record` is:
 * a version written since the document was read is on no page of this read. `pages`: those held
 * (both kinds may share them: document ids are unique). `limitParam`: the query's, which the schema
 * checked is a whole number from 1 to 100 but which arrives as text.
 */
export function listVersions<T>(
  kind: VersionedKind<T>,
  pages: VersionPages,
  record: DocumentRecord<T>,
  limitParam: number | string | undefined,
  cursor: string | undefined,
): Promise<VersionPage> {
  const limit = limitParam === undefined ? DEFAULT_PAGE : Number(limitParam);
  const before = cursor === undefined ? record.version + 1 : decodeVersionCursor(cursor);
  return pages.get(record.id, record.version, before, limit, () => pages.build(record.id, record.version, before, limit, storeRead(kind, record.id)));
}

/** The document's versions as the store lists them, each as a list's item. */
const storeRead =
  <T>(kind: VersionedKind<T>, documentId: string): VersionRead =>
  async (before, count) =>
    (await kind.versions.list(documentId, before, count)).map((e) => ({ version: e.version, json: itemJson(documentId, e) }));

/** A version as a list's item. */
const itemJson = (documentId: string, e: VersionEntry) =>
  `{"version":${e.version},"version_id":${JSON.stringify(versionId(documentId, e.version))},"updated_at":"${formatStamp(e.stampMicros)}","author":${JSON.stringify(e.author)},"changes":${e.changesJson}}`;

/** The version a version list's cursor names: the page continues below it. */
const decodeVersionCursor = (cursor: string): number =>
  decodeCursor(cursor, ({ v }) => (typeof v === 'number' && Number.isInteger(v) && v >= 1 ? v : undefined));

/** One version as stored, and its stamp (the ETag's value). */
export async function readVersion<T>(kind: VersionedKind<T>, record: DocumentRecord<T>, ref: string) {
  const kept = await keptVersion(kind.versions, record, ref, kind.noun);
  return { json: kept.json as Serialized<T>, updatedAt: formatStamp(kept.stampMicros) };
}

/**
 * The patch that turns version `fromRef` into version `toRef` (`current` by default). Objects are
 * compared member by member and arrays item by item: linear in the documents' size (which the
 * workspace's document_bytes bounds).
 */
export async function diffVersions<T>(
  kind: VersionedKind<T>,
  record: DocumentRecord<T>,
  fromRef: string,
  toRef = 'current',
): Promise<{ from: number; to: number; patch: JsonPatchOperation[] }> {
  const from = await keptVersion(kind.versions, record, fromRef, kind.noun);
  const to = toRef === 'current' ? { version: record.version, json: record.json } : await keptVersion(kind.versions, record, toRef, kind.noun, 'to');
  const target = JSON.parse(to.json) as object;
  // compare makes add, remove and replace operations only (no test: not invertible).
  const patch = compare(JSON.parse(from.json) as object, target) as JsonPatchOperation[];
  return { from: from.version, to: to.version, patch: applicableEverywhere(patch, target) };
}

/** What a run of kept version `ref` executes: the document as that version kept it (a test run's `version`). */
export async function runnableVersion<T>(kind: VersionedKind<T>, record: DocumentRecord<T>, ref: string | number) {
  if (ref === record.version || ref === String(record.version)) return record;
  const kept = await keptVersion(kind.versions, record, ref, kind.noun, 'body.version');
  return { id: record.id, slug: record.slug, version: kept.version, json: kept.json as Serialized<T>, document: JSON.parse(kept.json) as T };
}
