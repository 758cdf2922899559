// The kept versions of agents, workflows, skills and eval datasets: list, read, compare, restore (services/versions.ts;
// a restore is the kind's replace, so its reply is a write result).
import { etagFor } from '../../domain/etag';
import type { Agent, EvalDataset, Skill, Workflow } from '../../domain/types';
import * as agents from '../../services/agents';
import type { Principal, ServiceContext } from '../../services/context';
import * as datasets from '../../services/eval-datasets';
import * as skills from '../../services/skills';
import * as versions from '../../services/versions';
import * as workflows from '../../services/workflows';
import type { DocumentRecord, VersionRepository } from '../../store/port';
import { agentWriteReply } from './agents';
import { evalDatasetWriteReply } from './eval-datasets';
import { nextLink } from './next-link';
import { skillWriteReply } from './skills';
import type { Handlers } from './types';
import { workflowWriteReply } from './workflows';

/** The replies every kind gives alike: `base` is the kind's collection path. */
function versionReplies<T>(
  noun: string,
  base: string,
  find: (ctx: ServiceContext, who: Principal, ref: string) => Promise<DocumentRecord<T>>,
  repository: (ctx: ServiceContext) => VersionRepository<T>,
) {
  const kind = (ctx: ServiceContext): versions.VersionedKind<T> => ({ noun, versions: repository(ctx) });
  return {
    async list(ctx: ServiceContext, who: Principal, ref: string, query: { limit?: number; cursor?: string }) {
      const page = await versions.listVersions(kind(ctx), ctx.versionPages, await find(ctx, who, ref), query.limit, query.cursor);
      return {
        status: 200 as const,
        headers: nextLink(`${base}/${encodeURIComponent(ref)}/versions`, query, page.nextCursor),
        rawBody: page.json,
        stable: page,
      };
    },
    async read(ctx: ServiceContext, who: Principal, ref: string, version: string) {
      const kept = await versions.readVersion(kind(ctx), await find(ctx, who, ref), version);
      return { status: 200 as const, headers: { ETag: etagFor(kept.updatedAt) }, rawData: kept.json };
    },
    async diff(ctx: ServiceContext, who: Principal, ref: string, version: string, to: string | undefined) {
      return { status: 200 as const, body: { data: await versions.diffVersions(kind(ctx), await find(ctx, who, ref), version, to) } };
    },
  };
}

const agentVersions = versionReplies<Agent>('agent', '/api/build/agents', agents.findAgent, (ctx) => ctx.store.agents.versions);
const workflowVersions = versionReplies<Workflow>('workflow', '/api/build/workflows', workflows.findWorkflow, (ctx) => ctx.store.workflows.versions);
const skillVersions = versionReplies<Skill>('skill', '/api/build/skills', skills.findSkill, (ctx) => ctx.store.skills.versions);
const datasetVersions = versionReplies<EvalDataset>(
  'eval dataset',
  '/api/build/eval-datasets',
  datasets.findEvalDataset,
  (ctx) => ctx.store.evalDatasets.versions,
);

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
  | 'listSkillVersions'
  | 'getSkillVersion'
  | 'diffSkillVersions'
  | 'restoreSkillVersion'
  | 'listEvalDatasetVersions'
  | 'getEvalDatasetVersion'
  | 'diffEvalDatasetVersions'
  | 'restoreEvalDatasetVersion'
> = {
  listAgentVersions: ({ ctx, principal, params, query }) => agentVersions.list(ctx, principal, params.ref, query),
  getAgentVersion: ({ ctx, principal, params }) => agentVersions.read(ctx, principal, params.ref, params.version),
  diffAgentVersions: ({ ctx, principal, params, query }) => agentVersions.diff(ctx, principal, params.ref, params.version, query.to),
  restoreAgentVersion: async ({ ctx, principal, params, query, headers }) =>
    agentWriteReply(await agents.restoreAgent(ctx, principal, params.ref, headers['if-match'] as string, params.version, query.force === 'true')),
  listWorkflowVersions: ({ ctx, principal, params, query }) => workflowVersions.list(ctx, principal, params.ref, query),
  getWorkflowVersion: ({ ctx, principal, params }) => workflowVersions.read(ctx, principal, params.ref, params.version),
  diffWorkflowVersions: ({ ctx, principal, params, query }) => workflowVersions.diff(ctx, principal, params.ref, params.version, query.to),
  restoreWorkflowVersion: async ({ ctx, principal, params, headers }) =>
    workflowWriteReply(await workflows.restoreWorkflow(ctx, principal, params.ref, headers['if-match'] as string, params.version)),
  listSkillVersions: ({ ctx, principal, params, query }) => skillVersions.list(ctx, principal, params.name, query),
  getSkillVersion: ({ ctx, principal, params }) => skillVersions.read(ctx, principal, params.name, params.version),
  diffSkillVersions: ({ ctx, principal, params, query }) => skillVersions.diff(ctx, principal, params.name, params.version, query.to),
  restoreSkillVersion: async ({ ctx, principal, params, headers }) =>
    skillWriteReply(await skills.restoreSkill(ctx, principal, params.name, headers['if-match'] as string, params.version)),
  listEvalDatasetVersions: ({ ctx, principal, params, query }) => datasetVersions.list(ctx, principal, params.dataset, query),
  getEvalDatasetVersion: ({ ctx, principal, params }) => datasetVersions.read(ctx, principal, params.dataset, params.version),
  diffEvalDatasetVersions: ({ ctx, principal, params, query }) => datasetVersions.diff(ctx, principal, params.dataset, params.version, query.to),
  restoreEvalDatasetVersion: async ({ ctx, principal, params, headers }) =>
    evalDatasetWriteReply(await datasets.restoreEvalDataset(ctx, principal, params.dataset, headers['if-match'] as string, params.version)),
};
