// The kept versions of agents and workflows: list, read, compare, restore (services/versions.ts;
// a restore is the kind's replace, so its reply is a write result).
import querystring from 'node:querystring';
import { etagFor } from '../../domain/etag';
import type { Agent, Workflow } from '../../domain/types';
import * as agents from '../../services/agents';
import type { ServiceContext } from '../../services/context';
import * as versions from '../../services/versions';
import * as workflows from '../../services/workflows';
import { agentWriteReply } from './agents';
import type { Handlers } from './types';
import { workflowWriteReply } from './workflows';

/** `Link: <path?query with the next cursor>; rel="next"`, when there is a next page. */
function nextLink(path: string, limit: number | undefined, nextCursor: string | null): Record<string, string> | undefined {
  if (nextCursor === null) return undefined;
  return { Link: `<${path}?${querystring.stringify({ ...(limit !== undefined && { limit }), cursor: nextCursor })}>; rel="next"` };
}

const agentKind = (ctx: ServiceContext): versions.VersionedKind<Agent> => ({ noun: 'agent', versions: ctx.store.agents.versions });
const workflowKind = (ctx: ServiceContext): versions.VersionedKind<Workflow> => ({ noun: 'workflow', versions: ctx.store.workflows.versions });
const DEFAULT_LIMIT = 20;

export const versionHandlers: Pick<
  Handlers,
  | 'listAgentVersions'
  | 'getAgentVersion'
  | 'diffAgentVersions'
  | 'restoreAgentVersion'
  | 'listWorkflowVersions'
  | 'getWorkflowVersion'
  | 'diffWorkflowVersions'
  | 'restoreWorkflowVersion'
> = {
  listAgentVersions: async ({ ctx, principal, params, query }) => {
    const record = await agents.findAgent(ctx, principal, params.ref);
    const page = await versions.listVersions(agentKind(ctx), record, query.limit ?? DEFAULT_LIMIT, query.cursor);
    const headers = nextLink(`/api/build/agents/${encodeURIComponent(params.ref)}/versions`, query.limit, page.nextCursor);
    return { status: 200, headers, body: { data: page.data, next_cursor: page.nextCursor } };
  },
  getAgentVersion: async ({ ctx, principal, params }) => {
    const version = await versions.readVersion(agentKind(ctx), await agents.findAgent(ctx, principal, params.ref), params.version);
    return { status: 200, headers: { ETag: etagFor(version.updatedAt) }, rawData: version.json };
  },
  diffAgentVersions: async ({ ctx, principal, params, query }) => {
    const record = await agents.findAgent(ctx, principal, params.ref);
    return { status: 200, body: { data: await versions.diffVersions(agentKind(ctx), record, params.version, query.to) } };
  },
  restoreAgentVersion: async ({ ctx, principal, params, query, headers }) =>
    agentWriteReply(await agents.restoreAgent(ctx, principal, params.ref, headers['if-match'] as string, params.version, query.force === 'true')),

  listWorkflowVersions: async ({ ctx, principal, params, query }) => {
    const record = await workflows.findWorkflow(ctx, principal, params.ref);
    const page = await versions.listVersions(workflowKind(ctx), record, query.limit ?? DEFAULT_LIMIT, query.cursor);
    const headers = nextLink(`/api/build/workflows/${encodeURIComponent(params.ref)}/versions`, query.limit, page.nextCursor);
    return { status: 200, headers, body: { data: page.data, next_cursor: page.nextCursor } };
  },
  getWorkflowVersion: async ({ ctx, principal, params }) => {
    const version = await versions.readVersion(workflowKind(ctx), await workflows.findWorkflow(ctx, principal, params.ref), params.version);
    return { status: 200, headers: { ETag: etagFor(version.updatedAt) }, rawData: version.json };
  },
  diffWorkflowVersions: async ({ ctx, principal, params, query }) => {
    const record = await workflows.findWorkflow(ctx, principal, params.ref);
    return { status: 200, body: { data: await versions.diffVersions(workflowKind(ctx), record, params.version, query.to) } };
  },
  restoreWorkflowVersion: async ({ ctx, principal, params, headers }) =>
    workflowWriteReply(await workflows.restoreWorkflow(ctx, principal, params.ref, headers['if-match'] as string, params.version)),
};
