// Eval datasets (docs/evals.md): read, list, create, replace, restore and delete. Datasets are the
// whole workspace's (domain/spaces.ts): every member sees every dataset, and an eval of any agent
// the caller sees may run over one.
import { randomUUID } from 'node:crypto';
import { STAMP_SIZED } from '../domain/agent';
import { describeEvalDatasetChanges } from '../domain/changes';
import { DATASET_STORED_BYTES, DATASETS_PER_WORKSPACE, datasetProblems, materialiseDataset } from '../domain/evals/dataset';
import type { EvalDataset, EvalDatasetCreate, EvalDatasetListItem, EvalDatasetReplace } from '../domain/types';
import { badRequest, conflict, notFound } from '../errors';
import type { EvalDatasetRecord, ListVersion } from '../store/port';
import { assertStampsMatch, staleConflict } from './concurrency';
import type { Principal, ServiceContext } from './context';
import { keyedListPage } from './keyed-list-pages';
import { jsonBytes, rejectProblems } from './references';
import { keptVersion, restoredNote } from './versions';

export interface EvalDatasetWrite {
  record: EvalDatasetRecord;
  changes: string[];
}

const tooLarge = (bytes: number) => badRequest(`body: the dataset as stored is ${bytes} bytes; at most ${DATASET_STORED_BYTES} (512 KiB)`);

/** The dataset `ref` (its slug, or its id) names in the caller's workspace, or 404. */
export async function findEvalDataset(ctx: ServiceContext, who: Principal, ref: string): Promise<EvalDatasetRecord> {
  const record = await ctx.store.evalDatasets.find(who.workspaceId, ref);
  if (!record) throw notFound(`eval dataset '${ref}' not found in this workspace`);
  return record;
}

/** The rules the schema cannot state (a case's criteria name the workspace's tools), and the size as stored. */
async function checked(ctx: ServiceContext, who: Principal, input: EvalDatasetCreate, id: string, updatedAt: string): Promise<EvalDataset> {
  const { tools } = await ctx.apps.of(who.workspaceId);
  rejectProblems(datasetProblems(input, (slug) => tools.has(slug)));
  const doc = materialiseDataset(input, id, updatedAt);
  // Measured as stored: the stamp's and a large version's digits added.
  const bytes = jsonBytes({ ...doc, version: 2 ** 31 - 1, updated_at: STAMP_SIZED });
  if (bytes > DATASET_STORED_BYTES) throw tooLarge(bytes);
  return doc;
}

export async function createEvalDataset(ctx: ServiceContext, who: Principal, body: EvalDatasetCreate): Promise<EvalDatasetWrite> {
  const id = randomUUID();
  const doc = await checked(ctx, who, body, id, '');
  const meta = (stored: EvalDataset) => ({ author: who.userId, changes: describeEvalDatasetChanges(null, stored) });
  const outcome = await ctx.store.evalDatasets.create(who.workspaceId, id, doc, { limit: DATASETS_PER_WORKSPACE, maxBytes: DATASET_STORED_BYTES }, meta);
  if (!outcome.ok) {
    if (outcome.reason === 'too_large') throw tooLarge(outcome.bytes);
    throw outcome.reason === 'slug_taken'
      ? conflict(`body.slug: '${doc.slug}' is taken in this workspace; choose another slug`)
      : conflict(`this workspace has reached its limit of ${DATASETS_PER_WORKSPACE} eval datasets`);
  }
  return { record: outcome.record, changes: describeEvalDatasetChanges(null, outcome.record.document) };
}

export async function replaceEvalDataset(
  ctx: ServiceContext,
  who: Principal,
  ref: string,
  ifMatch: string,
  body: EvalDatasetReplace,
): Promise<EvalDatasetWrite> {
  const current = await findEvalDataset(ctx, who, ref);
  assertStampsMatch({ ifMatch, bodyStamp: body.updated_at, stored: current.document, rule: 'utc-only' });
  if (body.slug !== current.slug) {
    rejectProblems([{ path: 'body.slug', message: `'${body.slug}' differs from the dataset's slug '${current.slug}'; a dataset's slug cannot change` }]);
  }
  return replaceWith(ctx, who, current, body);
}

/** Writes the content of a kept version as a new version, as a replace with that body would. */
export async function restoreEvalDataset(ctx: ServiceContext, who: Principal, ref: string, ifMatch: string, versionRef: string): Promise<EvalDatasetWrite> {
  const current = await findEvalDataset(ctx, who, ref);
  assertStampsMatch({ ifMatch, stored: current.document, rule: 'utc-only' });
  const kept = await keptVersion(ctx.store.evalDatasets.versions, current, versionRef, 'eval dataset');
  return replaceWith(ctx, who, current, JSON.parse(kept.json) as EvalDataset, kept.version);
}

async function replaceWith(
  ctx: ServiceContext,
  who: Principal,
  current: EvalDatasetRecord,
  body: EvalDatasetCreate,
  restoredFrom?: number,
): Promise<EvalDatasetWrite> {
  const doc = await checked(ctx, who, body, current.id, current.document.updated_at);
  const changes = [...(restoredFrom === undefined ? [] : [restoredNote(restoredFrom)]), ...describeEvalDatasetChanges(current.document, doc)];
  const outcome = await ctx.store.evalDatasets.replace(who.workspaceId, current.id, current.stampMicros, doc, { author: who.userId, changes });
  if (!outcome.ok) {
    throw staleConflict(
      `eval dataset '${current.slug}' changed while this write was prepared; read it again and rebase your change`,
      outcome.current?.document ?? null,
    );
  }
  return { record: outcome.record, changes };
}

/** Deletes the dataset and its versions; the evals that ran over it keep what they ran (their cases are their own). */
export async function deleteEvalDataset(ctx: ServiceContext, who: Principal, ref: string): Promise<void> {
  const current = await findEvalDataset(ctx, who, ref);
  await ctx.store.evalDatasets.remove(who.workspaceId, current.id);
}

/** A page of the workspace's datasets, by slug. */
export const evalDatasetListPage = (list: ListVersion<EvalDatasetListItem[]>, query: { limit?: number | string; cursor?: string }) =>
  keyedListPage(list, 'slug', query);
