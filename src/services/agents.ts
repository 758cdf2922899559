// Agent use cases: read, validate, create, replace and set status. Each one reads what it needs,
// lets the pure domain decide, and hands the store one compare-and-set write.
import { randomUUID } from 'node:crypto';
import { badRequest, conflict, notFound } from '../errors';
import { assignTriggerIds, materialiseAgent, normaliseAgent, slugFromName } from '../domain/agent';
import { describeAgentChanges } from '../domain/changes';
import { describeProblems, type Agent, type AgentCreate, type AgentDraft, type AgentReplace, type AgentStatus } from '../domain/types';
import type { AgentRecord } from '../store';
import { assertStampsMatch, staleConflict } from './concurrency';
import type { Principal, ServiceContext } from './context';

export interface AgentWrite {
  record: AgentRecord;
  applied: string[];
  changes: string[];
}

export async function findAgent(ctx: ServiceContext, who: Principal, ref: string): Promise<AgentRecord> {
  const record = await ctx.store.agents.find(who.workspaceId, ref);
  if (!record) throw notFound(`agent '${ref}' not found in this workspace`);
  return record;
}

export async function validateAgent(_ctx: ServiceContext, _who: Principal, body: AgentDraft) {
  const { document, changes } = normaliseAgent(body);
  return { valid: true as const, changes, document };
}

export async function createAgent(ctx: ServiceContext, who: Principal, body: AgentCreate): Promise<AgentWrite> {
  const { document: draft } = normaliseAgent(body);
  const { triggers, problems } = assignTriggerIds(draft.triggers, [], randomUUID);
  if (problems.length) throw badRequest(describeProblems(problems));
  const id = randomUUID();
  const doc = materialiseAgent(draft, {
    id,
    slug: body.slug ?? slugFromName(body.name),
    status: 'draft',
    updated_at: '',
    triggers,
  });
  const outcome = await ctx.store.agents.create(who.workspaceId, id, doc, {
    deriveSlug: body.slug === undefined,
    limit: ctx.limits.agents,
  });
  if (!outcome.ok) {
    throw outcome.reason === 'slug_taken'
      ? conflict(`body.slug: '${doc.slug}' is taken in this workspace; choose another slug or omit it to derive one from name`)
      : conflict(`this workspace has reached its limit of ${ctx.limits.agents} agents`);
  }
  return { record: outcome.record, applied: stagesOf(null, outcome.record.document), changes: describeAgentChanges(null, outcome.record.document) };
}

export async function replaceAgent(
  ctx: ServiceContext,
  who: Principal,
  ref: string,
  ifMatch: string,
  body: AgentReplace,
): Promise<AgentWrite> {
  const current = await findAgent(ctx, who, ref);
  assertStampsMatch({ ifMatch, bodyStamp: body.updated_at, stored: current.document, rule: 'instant' });
  if (body.id !== undefined && body.id.toLowerCase() !== current.id) {
    throw badRequest(`body.id: '${body.id}' is not the id of agent '${current.slug}' (${current.id}); a replace cannot move a document`);
  }
  if (body.slug !== undefined && body.slug !== current.slug) {
    throw badRequest(`body.slug: '${body.slug}' differs from the stored slug '${current.slug}'; a slug cannot change after creation`);
  }
  const { document: draft } = normaliseAgent(body);
  const { triggers, problems } = assignTriggerIds(draft.triggers, await ctx.store.agents.triggers(current.id), randomUUID);
  if (problems.length) throw badRequest(describeProblems(problems));
  const doc = materialiseAgent(draft, {
    id: current.id,
    slug: current.slug,
    status: current.document.status,
    updated_at: current.document.updated_at,
    triggers,
  });
  return write(ctx, who, current, doc);
}

export async function setAgentStatus(
  ctx: ServiceContext,
  who: Principal,
  ref: string,
  ifMatch: string,
  status: AgentStatus,
): Promise<AgentWrite> {
  const current = await findAgent(ctx, who, ref);
  assertStampsMatch({ ifMatch, stored: current.document, rule: 'instant' });
  return write(ctx, who, current, { ...current.document, status });
}

async function write(ctx: ServiceContext, who: Principal, current: AgentRecord, doc: Agent): Promise<AgentWrite> {
  const outcome = await ctx.store.agents.replace(who.workspaceId, current.id, current.stampMicros, doc);
  if (!outcome.ok) {
    // Another write landed between our read and this one.
    throw staleConflict(`agent '${current.slug}' changed while this write was prepared; read it again and rebase your change`, outcome.current?.document ?? null);
  }
  const after = outcome.record.document;
  return { record: outcome.record, applied: stagesOf(current.document, after), changes: describeAgentChanges(current.document, after) };
}

/** The stages a successful write landed: the document always, triggers when there were any to write. */
function stagesOf(before: Agent | null, after: Agent): string[] {
  return before?.triggers.length || after.triggers.length ? ['document', 'triggers'] : ['document'];
}
