// Listing runs: the filters of a list request checked and turned into a store query, the cursor
// (the last id shown: pages.ts), and the page as JSON (its items come from the store as the JSON of
// their short projection: see store/shared/run-lists.ts).
import type { components } from '../../generated/api';
import { badRequest } from '../errors';
import { sees } from '../domain/spaces';
import { isUuid } from '../ids';
import type { RunKind, RunListQuery, RunListRow, RunStatus } from '../store/port';
import type { Principal, ServiceContext } from './context';
import { DEFAULT_PAGE, decodeCursor, pageOf, type Page } from './pages';

type AgentRunListItemPage = components['schemas']['AgentRunListItemPage'];
type WorkflowRunListItemPage = components['schemas']['WorkflowRunListItemPage'];

const STATUSES: readonly RunStatus[] = ['queued', 'running', 'awaiting_approval', 'succeeded', 'failed', 'refused', 'cancelled'];

/** The query string of a list request as node parsed it (a repeated parameter is an array). */
export type ListParams = Record<string, string | string[] | undefined>;

const one = (params: ListParams, name: string): string | undefined => {
  const value = params[name];
  if (Array.isArray(value)) throw badRequest(`${name}: give it at most once`);
  return value;
};

/** The run id a run list's cursor names: the last one the previous page showed. */
export const decodeRunCursor = (cursor: string): string =>
  decodeCursor(cursor, ({ id }) => (typeof id === 'string' && isUuid(id) ? id.toLowerCase() : undefined));

function instant(params: ListParams, name: string): string | undefined {
  const value = one(params, name);
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw badRequest(`${name}: must be an ISO 8601 date-time`);
  return new Date(ms).toISOString();
}

/** The store query of a list request; `targetOf` resolves the agent or workflow filter. */
async function queryOf(kind: RunKind, who: Principal, params: ListParams, targetOf: (ref: string) => Promise<string>): Promise<RunListQuery> {
  const limitText = one(params, 'limit');
  const limit = limitText === undefined ? DEFAULT_PAGE : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw badRequest('limit: must be a whole number from 1 to 100');
  const statusParam = params.status;
  const statuses = (statusParam === undefined ? [] : Array.isArray(statusParam) ? statusParam : [statusParam]) as RunStatus[];
  const unknown = statuses.find((s) => !STATUSES.includes(s));
  if (unknown !== undefined) throw badRequest(`status: '${unknown}' is not a run status (${STATUSES.join(', ')})`);
  const cursor = one(params, 'cursor');
  const ref = one(params, kind);
  return {
    kind,
    workspaceId: who.workspaceId,
    userId: who.userId,
    ...(!who.admin && { teams: who.teams }),
    ...(ref !== undefined && { targetId: await targetOf(ref) }),
    ...(statuses.length && { statuses }),
    ...(one(params, 'source') !== undefined && { source: one(params, 'source') }),
    ...(instant(params, 'started_after') !== undefined && { acceptedFrom: instant(params, 'started_after') }),
    ...(instant(params, 'started_before') !== undefined && { acceptedBefore: instant(params, 'started_before') }),
    ...(cursor !== undefined && { beforeId: decodeRunCursor(cursor) }),
    limit: limit + 1, // one more than shown: whether a next page exists
  };
}

const paged = <T>(rows: RunListRow[], limit: number): Page<T> =>
  pageOf(
    rows,
    limit,
    (row) => row.item,
    (last) => ({ id: last.id }),
  );

export async function listAgentRuns(ctx: ServiceContext, who: Principal, params: ListParams): Promise<Page<AgentRunListItemPage>> {
  const query = await queryOf('agent', who, params, async (ref) => {
    const agent = await ctx.store.agents.find(who.workspaceId, ref);
    if (!agent || !sees(who, agent.document.space.team)) throw badRequest(`agent: '${ref}' is not an agent of this workspace`);
    return agent.id;
  });
  return paged(await ctx.store.runs.list(query), query.limit - 1);
}

export async function listWorkflowRuns(ctx: ServiceContext, who: Principal, params: ListParams): Promise<Page<WorkflowRunListItemPage>> {
  const query = await queryOf('workflow', who, params, async (ref) => {
    if (isUuid(ref)) return ref.toLowerCase(); // a deleted workflow's runs stay listed under its id
    const workflow = await ctx.store.workflows.find(who.workspaceId, ref);
    if (!workflow || !sees(who, workflow.document.space.team))
      throw badRequest(`workflow: '${ref}' is not a workflow of this workspace (a deleted workflow's runs are listed by its id)`);
    return workflow.id;
  });
  return paged(await ctx.store.runs.list(query), query.limit - 1);
}
