// Agent operations: read the validated request, call the service, shape the reply.
import { etagFor } from '../../domain/etag';
import * as agents from '../../services/agents';
import * as runs from '../../services/runs';
import type { AgentWrite } from '../../services/agents';
import type { components } from '../../../generated/api';
import { withDocumentJson, type Handlers } from './types';
import type { Serialized } from '../../store/port';
import type { Agent } from '../../domain/types';
import { foldersOf, listPage, listRequest } from '../../services/document-lists';
import { nextLink } from './next-link';
import { listAgentMessages } from '../../services/agent-messages';
import type { ListParams } from '../../services/run-lists';

function writeResult(write: AgentWrite) {
  const result = { applied: write.applied, changes: write.changes, version: write.record.version };
  // webhook_urls appears only when the write created a webhook trigger (its URL is shown once).
  return withDocumentJson<components['schemas']['AgentWriteResult']>(
    write.json,
    write.webhookUrls.length ? { ...result, webhook_urls: write.webhookUrls } : result,
  );
}

const etag = (write: AgentWrite) => etagFor(write.record.updatedAt);

/** The reply of a write that replaced the agent (replace, status, restore). */
export const agentWriteReply = (write: AgentWrite) => ({ status: 200 as const, headers: { ETag: etag(write) }, rawData: writeResult(write) });

export const agentHandlers: Pick<
  Handlers,
  | 'listAgents'
  | 'listFolders'
  | 'createAgent'
  | 'getAgent'
  | 'replaceAgent'
  | 'validateAgent'
  | 'testAgent'
  | 'rotateWebhook'
  | 'setAgentStatus'
  | 'listAgentMessages'
> = {
  listAgentMessages: async ({ ctx, principal, params, query }) => {
    const listParams = query as ListParams;
    const page = await listAgentMessages(ctx, principal, params.ref, listParams);
    return { status: 200, headers: nextLink(`/api/build/agents/${encodeURIComponent(params.ref)}/messages`, listParams, page.nextCursor), rawBody: page.json };
  },

  listAgents: async ({ ctx, principal, query }) => {
    const page = listPage(await ctx.store.agents.list(principal.workspaceId), principal, listRequest(query));
    return { status: 200, headers: nextLink('/api/build/agents', query, page.nextCursor), rawBody: page.body, stable: page.stable };
  },

  listFolders: async ({ ctx, principal, query }) => ({
    status: 200,
    body: { data: foldersOf(await ctx.store.agents.list(principal.workspaceId), principal, query.space) },
  }),

  createAgent: async ({ ctx, principal, body }) => {
    const write = await agents.createAgent(ctx, principal, body);
    return {
      status: 201,
      headers: { ETag: etag(write), Location: `/api/build/agents/${write.record.id}` },
      rawData: writeResult(write),
    };
  },

  getAgent: async ({ ctx, principal, params }) => {
    const record = await agents.findAgent(ctx, principal, params.ref);
    const headers = { ETag: etagFor(record.updatedAt) };
    const live = await agents.agentWithTriggerStatus(ctx, record);
    // With triggers, their live status is spliced in (built again only when it changed); without, the stored version is sent as is.
    return live === null
      ? { status: 200, headers, rawData: record.json, stable: record }
      : { status: 200, headers, rawData: live.json as Serialized<Agent>, stable: live.stable };
  },

  replaceAgent: async ({ ctx, principal, params, query, headers, body }) => {
    return agentWriteReply(await agents.replaceAgent(ctx, principal, params.ref, headers['if-match'] as string, body, query.force === 'true'));
  },

  validateAgent: async ({ ctx, principal, body }) => {
    const { documentJson, ...result } = await agents.validateAgent(ctx, principal, body);
    return { status: 200, rawData: withDocumentJson<components['schemas']['AgentValidationResponse']['data']>(documentJson, result) };
  },

  setAgentStatus: async ({ ctx, principal, params, headers, body }) => {
    return agentWriteReply(await agents.setAgentStatus(ctx, principal, params.ref, headers['if-match'] as string, body.status));
  },

  testAgent: async ({ ctx, principal, params, body }) => {
    const started = await runs.testAgent(ctx, principal, params.ref, body.prompt, body.version);
    return { status: 202, headers: { Location: `/api/build/runs/${started.run_id}` }, body: { data: started } };
  },

  rotateWebhook: async ({ ctx, principal, params, body }) => {
    const { record, secret } = await agents.rotateWebhook(ctx, principal, params.ref, body.trigger_id);
    return {
      status: 200,
      headers: { ETag: etagFor(record.document.updated_at) },
      body: {
        data: {
          trigger_id: secret.triggerId,
          secret_prefix: secret.prefix,
          url: secret.url,
          ...(secret.signingSecret !== null && { signing_secret: secret.signingSecret }),
        },
      },
    };
  },
};
