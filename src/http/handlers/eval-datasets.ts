// Eval dataset operations (docs/evals.md): read the validated request, call the service, shape the reply.
import { etagFor } from '../../domain/etag';
import type { components } from '../../../generated/api';
import * as datasets from '../../services/eval-datasets';
import type { EvalDatasetWrite } from '../../services/eval-datasets';
import { nextLink } from './next-link';
import { withDocumentJson, type Handlers } from './types';

const writeResult = (write: EvalDatasetWrite) =>
  withDocumentJson<components['schemas']['EvalDatasetWriteResult']>(write.record.json, {
    applied: ['document'],
    changes: write.changes,
    version: write.record.version,
  });

const etag = (write: EvalDatasetWrite) => etagFor(write.record.updatedAt);

/** The reply of a write that replaced the dataset (replace, restore). */
export const evalDatasetWriteReply = (write: EvalDatasetWrite) => ({ status: 200 as const, headers: { ETag: etag(write) }, rawData: writeResult(write) });

export const evalDatasetHandlers: Pick<Handlers, 'listEvalDatasets' | 'createEvalDataset' | 'getEvalDataset' | 'replaceEvalDataset' | 'deleteEvalDataset'> = {
  listEvalDatasets: async ({ ctx, principal, query }) => {
    const page = datasets.evalDatasetListPage(await ctx.store.evalDatasets.list(principal.workspaceId), query);
    return { status: 200, headers: nextLink('/api/build/eval-datasets', query, page.nextCursor), rawBody: page.body, stable: page.stable };
  },

  createEvalDataset: async ({ ctx, principal, body }) => {
    const write = await datasets.createEvalDataset(ctx, principal, body);
    return { status: 201, headers: { ETag: etag(write), Location: `/api/build/eval-datasets/${write.record.slug}` }, rawData: writeResult(write) };
  },

  getEvalDataset: async ({ ctx, principal, params }) => {
    const record = await datasets.findEvalDataset(ctx, principal, params.dataset);
    return { status: 200, headers: { ETag: etagFor(record.updatedAt) }, rawData: record.json, stable: record };
  },

  replaceEvalDataset: async ({ ctx, principal, params, headers, body }) =>
    evalDatasetWriteReply(await datasets.replaceEvalDataset(ctx, principal, params.dataset, headers['if-match'] as string, body)),

  deleteEvalDataset: async ({ ctx, principal, params }) => {
    await datasets.deleteEvalDataset(ctx, principal, params.dataset);
    return { status: 200, body: { data: null } };
  },
};
