// Listing runs: the filters of a list request checked and turned into a store query, the opaque
// cursor (the last id shown, base64url JSON), and the page as JSON (its items come from the store
// as the JSON of their short projection: see store/shared/run-lists.ts).
import type { components } from '../../generated/api';
import { badRequest } from '../errors';
import { isUuid } from '../ids';
import { type RunKind, type RunListQuery, type RunListRow, type RunStatus, type Serialized } from '../store/port';
import type { Principal, ServiceContext } from './context';

type AgentRunListItemPage = components['schemas']['AgentRunListItemPage'];
type WorkflowRunListItemPage = components['schemas']['WorkflowRunListItemPage'];

export const DEFAULT_PAGE = 20;
const STATUSES: readonly RunStatus[] = ['queued', 'running', 'awaiting_approval', 'succeeded', 'failed', 'refused', 'cancelled'];

/** The query string of a list request as node parsed it (a repeated parameter is an array). */
export type ListParams = Record<string, string | string[] | undefined>;

export interface Page<T> {
  /** The page's JSON: `data` and `next_cursor`. */
  json: Serialized<T>;
  nextCursor: string | null;
}

const one = (params: ListParams, name: string): string | undefined => {
  const value = params[name];
  if (Array.isArray(value)) throw badRequest(`${name}: give it at most once`);
  return value;
};

export function encodeCursor(id: string): string {
  return Buffer.from(JSON.stringify({ id })).toString('base64url');
}

export function decodeCursor(cursor: string): string {
  try {
    const { id } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { id?: unknown };
    if (typeof id === 'string' && isUuid(id)) return id.toLowerCase();
  } catch {
    // falls through to the 400
  }
  throw badRequest('cursor: not a cursor of this list; pass the next_cursor of the previous page as it was given');
}

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
    ...(ref !== undefined && { targetId: await targetOf(ref) }),
    ...(statuses.length && { statuses }),
    ...(one(params, 'source') !== undefined && { source: one(params, 'source') }),
    ...(instant(params, 'started_after') !== undefined && { acceptedFrom: instant(params, 'started_after') }),
    ...(instant(params, 'started_before') !== undefined && { acceptedBefore: instant(params, 'started_before') }),
    ...(cursor !== undefined && { beforeId: decodeCursor(cursor) }),
    limit: limit + 1, // one more than shown: whether a next page exists
  };
}

function paged<T>(rows: RunListRow[], limit: number): Page<T> {
  const shown = rows.slice(0, limit);
  const nextCursor = rows.length > limit ? encodeCursor(shown[shown.length - 1]!.id) : null;
  const items = shown.map((row) => row.item).join(',');
  return { json: `{"data":[${items}],"next_cursor":${JSON.stringify(nextCursor)}}` as Serialized<T>, nextCursor };
}

export async function listAgentRuns(ctx: ServiceContext, who: Principal, params: ListParams): Promise<Page<AgentRunListItemPage>> {
  const query = await queryOf('agent', who, params, async (ref) => {
    const agent = await ctx.store.agents.find(who.workspaceId, ref);
    if (!agent) throw badRequest(`agent: '${ref}' is not an agent of this workspace`);
    return agent.id;
  });
  return paged(await ctx.store.runs.list(query), query.limit - 1);
}

export async function listWorkflowRuns(ctx: ServiceContext, who: Principal, params: ListParams): Promise<Page<WorkflowRunListItemPage>> {
  const query = await queryOf('workflow', who, params, async (ref) => {
    if (isUuid(ref)) return ref.toLowerCase(); // a deleted workflow's runs stay listed under its id
    const workflow = await ctx.store.workflows.find(who.workspaceId, ref);
    if (!workflow) throw badRequest(`workflow: '${ref}' is not a workflow of this workspace (a deleted workflow's runs are listed by its id)`);
    return workflow.id;
  });
  return paged(await ctx.store.runs.list(query), query.limit - 1);
}
