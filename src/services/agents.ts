// Agent use cases: read, validate, create, replace and set status. Each one reads what it needs,
// lets the pure domain decide, and hands the store one compare-and-set write.
import { randomUUID } from 'node:crypto';
import { badRequest, conflict, notFound } from '../errors';
import { assignTriggerIds, materialiseAgent, normaliseAgent, slugFromName } from '../domain/agent';
import { describeAgentChanges } from '../domain/changes';
import { describeProblems, type Agent, type AgentCreate, type AgentDraft, type AgentReplace, type AgentStatus } from '../domain/types';
import type { AgentRecord, SecretRow } from '../store';
import { assertStampsMatch, staleConflict } from './concurrency';
import type { Principal, ServiceContext } from './context';
import { mintSecretsForNewWebhooks, type WebhookSecret } from './webhooks';

export interface AgentWrite {
  record: AgentRecord;
  applied: string[];
  changes: string[];
  /** One-time URLs of the webhook triggers this write created (empty when it created none). */
  webhookUrls: { trigger_id: string; url: string }[];
}

const secretRows = (secrets: WebhookSecret[]): SecretRow[] => secrets.map(({ triggerId, hash, prefix }) => ({ triggerId, hash, prefix }));
const urlsOf = (secrets: WebhookSecret[]) => secrets.map((s) => ({ trigger_id: s.triggerId, url: s.url }));

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
  const identified = assignTriggerIds(draft.triggers, [], randomUUID);
  if (identified.problems.length) throw badRequest(describeProblems(identified.problems));
  const { triggers, secrets } = mintSecretsForNewWebhooks(identified.triggers, () => true, ctx.publicBaseUrl);
  const id = randomUUID();
  const doc = materialiseAgent(draft, {
    id,
    slug: body.slug ?? slugFromName(body.name),
    status: 'draft',
    updated_at: '',
    triggers,
  });
  const outcome = await ctx.store.agents.create(
    who.workspaceId,
    id,
    doc,
    { deriveSlug: body.slug === undefined, limit: ctx.limits.agents },
    secretRows(secrets),
  );
  if (!outcome.ok) {
    throw outcome.reason === 'slug_taken'
      ? conflict(`body.slug: '${doc.slug}' is taken in this workspace; choose another slug or omit it to derive one from name`)
      : conflict(`this workspace has reached its limit of ${ctx.limits.agents} agents`);
  }
  const after = outcome.record.document;
  return { record: outcome.record, applied: stagesOf(null, after, secrets.length > 0), changes: describeAgentChanges(null, after), webhookUrls: urlsOf(secrets) };
}

export async function replaceAgent(
  ctx: ServiceContext,
  who: Principal,
  ref: string,
  ifMatch: string,
  body: AgentReplace,
  force: boolean,
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
  const stored = await ctx.store.agents.triggers(current.id);
  const identified = assignTriggerIds(draft.triggers, stored, randomUUID);
  if (identified.problems.length) throw badRequest(describeProblems(identified.problems));
  const kept = new Set(identified.triggers.map((t) => t.id));
  const dropped = current.document.triggers.filter((t) => t.kind === 'webhook' && !kept.has(t.id));
  if (dropped.length && !force) {
    const names = dropped.map((t) => `'${t.name}' (${t.id})`).join(', ');
    throw staleConflict(
      `body.triggers: omits the webhook trigger${dropped.length > 1 ? 's' : ''} ${names}; its URL would stop working. Send it back, or replace with force=true to drop it`,
      current.document,
    );
  }
  const storedIds = new Set(stored.map((t) => t.id));
  const { triggers, secrets } = mintSecretsForNewWebhooks(identified.triggers, (triggerId) => !storedIds.has(triggerId), ctx.publicBaseUrl);
  const doc = materialiseAgent(draft, {
    id: current.id,
    slug: current.slug,
    status: current.document.status,
    updated_at: current.document.updated_at,
    triggers,
  });
  return write(ctx, who, current, doc, secrets, dropped.length > 0);
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
  return write(ctx, who, current, { ...current.document, status }, [], false);
}

async function write(
  ctx: ServiceContext,
  who: Principal,
  current: AgentRecord,
  doc: Agent,
  secrets: WebhookSecret[],
  droppedWebhooks: boolean,
): Promise<AgentWrite> {
  const outcome = await ctx.store.agents.replace(who.workspaceId, current.id, current.stampMicros, doc, secretRows(secrets));
  if (!outcome.ok) {
    // Another write landed between our read and this one.
    throw staleConflict(`agent '${current.slug}' changed while this write was prepared; read it again and rebase your change`, outcome.current?.document ?? null);
  }
  const after = outcome.record.document;
  return {
    record: outcome.record,
    applied: stagesOf(current.document, after, secrets.length > 0 || droppedWebhooks),
    changes: describeAgentChanges(current.document, after),
    webhookUrls: urlsOf(secrets),
  };
}

/** The stages a write landed: the document always, triggers when it had any to write, webhooks when secrets were minted or dropped. */
function stagesOf(before: Agent | null, after: Agent, webhooks: boolean): string[] {
  const stages = ['document'];
  if (before?.triggers.length || after.triggers.length) stages.push('triggers');
  if (webhooks) stages.push('webhooks');
  return stages;
}
