// Workflow operations: read the validated request, call the service, shape the reply.
import { etagFor } from '../../domain/etag';
import * as runs from '../../services/runs';
import * as workflows from '../../services/workflows';
import type { WorkflowWrite } from '../../services/workflows';
import type { components } from '../../../generated/api';
import { withDocumentJson, type Handlers } from './types';
import { listPage, listRequest } from '../../services/document-lists';
import { nextLink } from './next-link';

function writeResult(write: WorkflowWrite) {
  return withDocumentJson<components['schemas']['WorkflowWriteResult']>(write.record.json, {
    applied: write.applied,
    changes: write.changes,
    version: write.record.version,
  });
}

const etag = (write: WorkflowWrite) => etagFor(write.record.updatedAt);

/** The reply of a write that replaced the workflow (replace, restore). */
export const workflowWriteReply = (write: WorkflowWrite) => ({ status: 200 as const, headers: { ETag: etag(write) }, rawData: writeResult(write) });

export const workflowHandlers: Pick<
  Handlers,
  'listWorkflows' | 'createWorkflow' | 'getWorkflow' | 'replaceWorkflow' | 'deleteWorkflow' | 'validateWorkflow' | 'testWorkflow'
> = {
  listWorkflows: async ({ ctx, principal, query }) => {
    const page = listPage(await ctx.store.workflows.list(principal.workspaceId), principal, listRequest(query));
    return { status: 200, headers: nextLink('/api/build/workflows', query, page.nextCursor), rawBody: page.body, stable: page.stable };
  },

  createWorkflow: async ({ ctx, principal, body }) => {
    const write = await workflows.createWorkflow(ctx, principal, body);
    return {
      status: 201,
      headers: { ETag: etag(write), Location: `/api/build/workflows/${write.record.slug}` },
      rawData: writeResult(write),
    };
  },

  getWorkflow: async ({ ctx, principal, params }) => {
    const record = await workflows.findWorkflow(ctx, principal, params.ref);
    return { status: 200, headers: { ETag: etagFor(record.updatedAt) }, rawData: record.json, stable: record };
  },

  replaceWorkflow: async ({ ctx, principal, params, headers, body }) => {
    return workflowWriteReply(await workflows.replaceWorkflow(ctx, principal, params.ref, headers['if-match'] as string, body));
  },

  deleteWorkflow: async ({ ctx, principal, params }) => {
    await workflows.deleteWorkflow(ctx, principal, params.ref);
    return { status: 200, body: { data: null } };
  },

  validateWorkflow: async ({ ctx, principal, body }) => {
    const { documentJson, ...result } = await workflows.validateWorkflow(ctx, principal, body);
    return { status: 200, rawData: withDocumentJson<components['schemas']['WorkflowValidationResponse']['data']>(documentJson, result) };
  },

  testWorkflow: async ({ ctx, principal, params, body }) => {
    const started = await runs.testWorkflow(ctx, principal, params.ref, body?.input ?? {}, body?.version);
    return { status: 202, headers: { Location: `/api/build/workflow-runs/${started.run_id}` }, body: { data: started } };
  },
};
