// Agent use cases: read, validate, create, replace, set status and rotate a webhook secret. Each one
// reads what it needs, lets the pure domain decide, and hands the store one compare-and-set write.
import { randomUUID } from 'node:crypto';
import { conflict, notFound } from '../errors';
import {
  assignTriggerIds,
  materialiseAgent,
  normaliseAgent,
  restoreBody,
  slugFromName,
  storedAgentShape,
  storedTriggersOf,
  type StoredTrigger,
} from '../domain/agent';
import { describeAgentChanges } from '../domain/changes';
import { checkAgent, sizeProblem } from '../domain/semantics';
import type { Agent, AgentCreate, AgentDraft, AgentReplace, AgentStatus, Trigger } from '../domain/types';
import type { AgentRecord, ChannelTaken, SecretRow, Serialized } from '../store/port';
import { agentMailbox } from '../domain/mail-rules';
import { assertStampsMatch, staleConflict } from './concurrency';
import { keptVersion, restoredNote } from './versions';
import type { Principal, ServiceContext } from './context';
import { jsonBytes, referencesFor, rejectProblems, spaceProblems } from './references';
import { sees } from '../domain/spaces';
import { mintSecretsForWebhooks, mintWebhookSecret, type WebhookSecret } from './webhooks';

export interface AgentWrite {
  record: AgentRecord;
  applied: string[];
  changes: string[];
  /** One-time URLs (and signing secrets) of the webhook triggers this write minted them for (empty when none). */
  webhookUrls: { trigger_id: string; url: string; signing_secret?: string }[];
  /** The document as the write's reply shows it (the stored one, with its email address while email is enabled). */
  json: Serialized<Agent>;
}

/** What the store keeps of minted secrets: the URL secret's hash and prefix, the signing key sealed. */
const secretRows = (ctx: ServiceContext, secrets: WebhookSecret[]): SecretRow[] =>
  secrets.map(({ triggerId, hash, prefix, signingSecret }) => ({
    triggerId,
    hash,
    prefix,
    signingSecret: signingSecret === null ? null : ctx.secrets.seal(signingSecret, triggerId),
  }));
const urlsOf = (secrets: WebhookSecret[]) =>
  secrets.map((s) => ({ trigger_id: s.triggerId, url: s.url, ...(s.signingSecret !== null && { signing_secret: s.signingSecret }) }));

/** The agent `ref` names, if `who` sees its space (domain/spaces.ts); otherwise 404, as for an agent that does not exist. */
export async function findAgent(ctx: ServiceContext, who: Principal, ref: string): Promise<AgentRecord> {
  const record = await ctx.store.agents.find(who.workspaceId, ref);
  if (!record || !sees(who, record.document.space.team)) throw notFound(`agent '${ref}' not found in this workspace`);
  return record;
}

/** What the stored document will carry besides the request's members (its size depends on them). */
type Owned = { id?: string; slug: string; status: Agent['status'] };

/**
 * The one path validate, create and replace share: normalise, then every semantic rule (the size
 * of the document as it will be stored among them) and (for writes) trigger identity against the
 * stored triggers; all problems are reported in one 400.
 */
async function prepare(ctx: ServiceContext, who: Principal, body: AgentDraft, stored: StoredTrigger[] | null, owned: Owned) {
  const { document: draft, changes } = normaliseAgent(body);
  const problems = [
    ...spaceProblems(who, draft.space.team),
    ...checkAgent(
      draft,
      await referencesFor(ctx, who, draft.space.team, { workflows: draft.workflows, skills: draft.workspace_skills }),
      jsonBytes(storedAgentShape(draft, owned)),
    ),
  ];
  const identified = stored ? assignTriggerIds(draft.triggers, stored, randomUUID) : null;
  rejectProblems([...(identified?.problems ?? []), ...problems]);
  return { draft, changes, triggers: identified?.triggers ?? [] };
}

/** The validation result, with the normalised document as JSON (`documentJson`) to send as is. */
export async function validateAgent(ctx: ServiceContext, who: Principal, body: AgentDraft) {
  const { draft, changes } = await prepare(ctx, who, body, null, { id: body.id, slug: body.slug ?? slugFromName(body.name), status: 'draft' });
  return { valid: true as const, changes, documentJson: JSON.stringify(draft) };
}

export async function createAgent(ctx: ServiceContext, who: Principal, body: AgentCreate): Promise<AgentWrite> {
  const prepared = await prepare(ctx, who, body, [], { slug: body.slug ?? slugFromName(body.name), status: 'draft' });
  const { triggers, secrets } = mintSecretsForWebhooks(prepared.triggers, () => true, ctx.publicBaseUrl);
  const id = randomUUID();
  const doc = materialiseAgent(prepared.draft, {
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
    { deriveSlug: body.slug === undefined, limit: ctx.limits.agents, maxBytes: ctx.limits.document_bytes },
    secretRows(ctx, secrets),
    (stored) => ({ author: who.userId, changes: describeAgentChanges(null, stored) }),
  );
  if (!outcome.ok) {
    if (outcome.reason === 'too_large') rejectProblems([sizeProblem(outcome.bytes, ctx.limits.document_bytes)!]); // a derived slug's suffix tipped it over
    if (outcome.reason === 'channel_taken') throw channelTaken(outcome);
    throw outcome.reason === 'slug_taken'
      ? conflict(`body.slug: '${doc.slug}' is taken in this workspace; choose another slug or omit it to derive one from name`)
      : conflict(`this workspace has reached its limit of ${ctx.limits.agents} agents`);
  }
  const after = outcome.record.document;
  return {
    record: outcome.record,
    applied: stagesOf(null, after, secrets.length > 0),
    changes: describeAgentChanges(null, after),
    webhookUrls: urlsOf(secrets),
    json: withEmailAddress(ctx, outcome.record),
  };
}

export async function replaceAgent(ctx: ServiceContext, who: Principal, ref: string, ifMatch: string, body: AgentReplace, force: boolean): Promise<AgentWrite> {
  const current = await findAgent(ctx, who, ref);
  assertStampsMatch({ ifMatch, bodyStamp: body.updated_at, stored: current.document, rule: 'instant' });
  if (body.id !== undefined && body.id.toLowerCase() !== current.id) {
    rejectProblems([{ path: 'body.id', message: `'${body.id}' is not the id of agent '${current.slug}' (${current.id}); a replace cannot move a document` }]);
  }
  if (body.slug !== undefined && body.slug !== current.slug) {
    rejectProblems([{ path: 'body.slug', message: `'${body.slug}' differs from the stored slug '${current.slug}'; a slug cannot change after creation` }]);
  }
  return replaceWith(ctx, who, current, body, force);
}

/** Writes the content of a kept version as a new version, as a replace with that body would (restoreBody). */
export async function restoreAgent(ctx: ServiceContext, who: Principal, ref: string, ifMatch: string, versionRef: string, force: boolean): Promise<AgentWrite> {
  const current = await findAgent(ctx, who, ref);
  assertStampsMatch({ ifMatch, stored: current.document, rule: 'instant' });
  const kept = await keptVersion(ctx.store.agents.versions, current, versionRef, 'agent');
  return replaceWith(ctx, who, current, restoreBody(JSON.parse(kept.json) as Agent, current.document), force, kept.version);
}

/** A replace of `current` (read, its stamp matched) by `body`; `restoredFrom`: the version whose content it restores. */
async function replaceWith(
  ctx: ServiceContext,
  who: Principal,
  current: AgentRecord,
  body: AgentReplace,
  force: boolean,
  restoredFrom?: number,
): Promise<AgentWrite> {
  const stored = storedTriggersOf(current.document);
  const prepared = await prepare(ctx, who, body, stored, { id: current.id, slug: current.slug, status: current.document.status });
  const kept = new Set(prepared.triggers.map((t) => t.id));
  const dropped = current.document.triggers.filter((t) => t.kind === 'webhook' && !kept.has(t.id));
  if (dropped.length && !force) {
    const names = dropped.map((t) => `'${t.name}' (${t.id})`).join(', ');
    throw staleConflict(
      `body.triggers: omits the webhook trigger${dropped.length > 1 ? 's' : ''} ${names}; its URL would stop working. Send it back, or replace with force=true to drop it`,
      current.document,
    );
  }
  const storedById = new Map(stored.map((t) => [t.id, t]));
  // New webhook triggers, and ones that start signing, get their credentials (URL and signing key) minted.
  const needsSecrets = (t: { id: string; signing: string }) => {
    const before = storedById.get(t.id);
    return !before || (t.signing === 'standard-webhooks' && before.signing !== 'standard-webhooks');
  };
  const { triggers, secrets } = mintSecretsForWebhooks(prepared.triggers, needsSecrets, ctx.publicBaseUrl);
  const doc = materialiseAgent(prepared.draft, {
    id: current.id,
    slug: current.slug,
    status: current.document.status,
    updated_at: current.document.updated_at,
    triggers,
  });
  return write(ctx, who, current, doc, secrets, dropped.length > 0, restoredFrom);
}

export async function setAgentStatus(ctx: ServiceContext, who: Principal, ref: string, ifMatch: string, status: AgentStatus): Promise<AgentWrite> {
  const current = await findAgent(ctx, who, ref);
  assertStampsMatch({ ifMatch, stored: current.document, rule: 'instant' });
  return write(ctx, who, current, { ...current.document, status }, [], false);
}

const ROTATE_ATTEMPTS = 5;

/**
 * Re-mints one webhook trigger's secret: the old URL stops working at once and the new one is in
 * the result only. The trigger's secret_prefix is part of the document, so rotation is a write
 * (new stamp and version). The caller sends no stamp, so a concurrent write is simply retried.
 */
export async function rotateWebhook(
  ctx: ServiceContext,
  who: Principal,
  ref: string,
  triggerId: string,
): Promise<{ record: AgentRecord; secret: WebhookSecret }> {
  for (let attempt = 0; attempt < ROTATE_ATTEMPTS; attempt++) {
    const current = await findAgent(ctx, who, ref);
    const trigger = current.document.triggers.find((t) => t.id === triggerId.toLowerCase());
    if (trigger?.kind !== 'webhook') {
      throw notFound(`body.trigger_id: agent '${current.slug}' has no webhook trigger '${triggerId}'`);
    }
    if (current.document.status === 'archived') {
      throw conflict(`agent '${current.slug}' is archived; set its status to draft or active before rotating a webhook`);
    }
    const secret = mintWebhookSecret(trigger.id, ctx.publicBaseUrl, trigger.signing === 'standard-webhooks');
    const triggers = current.document.triggers.map((t): Trigger => (t.id === trigger.id ? { ...trigger, secret_prefix: secret.prefix } : t));
    const doc = { ...current.document, triggers };
    const meta = { author: who.userId, changes: describeAgentChanges(current.document, doc) };
    const outcome = await ctx.store.agents.replace(who.workspaceId, current.id, current.stampMicros, doc, secretRows(ctx, [secret]), meta);
    if (outcome.ok) return { record: outcome.record, secret };
  }
  throw conflict(`agent '${ref}' kept changing while its webhook was rotated; try again`);
}

async function write(
  ctx: ServiceContext,
  who: Principal,
  current: AgentRecord,
  doc: Agent,
  secrets: WebhookSecret[],
  droppedWebhooks: boolean,
  restoredFrom?: number,
): Promise<AgentWrite> {
  // The stamp is not a change (describeAgentChanges skips it): the changes are those of the document as stored.
  const changes = [...(restoredFrom === undefined ? [] : [restoredNote(restoredFrom)]), ...describeAgentChanges(current.document, doc)];
  const outcome = await ctx.store.agents.replace(who.workspaceId, current.id, current.stampMicros, doc, secretRows(ctx, secrets), {
    author: who.userId,
    changes,
  });
  if (!outcome.ok) {
    if ('reason' in outcome && outcome.reason === 'channel_taken') throw channelTaken(outcome);
    // Another write landed between our read and this one.
    throw staleConflict(
      `agent '${current.slug}' changed while this write was prepared; read it again and rebase your change`,
      outcome.current?.document ?? null,
    );
  }
  const after = outcome.record.document;
  return {
    record: outcome.record,
    applied: stagesOf(current.document, after, secrets.length > 0 || droppedWebhooks),
    changes,
    webhookUrls: urlsOf(secrets),
    json: withEmailAddress(ctx, outcome.record),
  };
}

/** The stages a write landed: the document always, triggers when it had any to write, webhooks when secrets were minted or dropped. */
function stagesOf(before: Agent | null, after: Agent, webhooks: boolean): string[] {
  const stages = ['document'];
  if (before?.triggers.length || after.triggers.length) stages.push('triggers');
  if (webhooks) stages.push('webhooks');
  return stages;
}

/** An agent read with its triggers' live status: the JSON, and an object that lives as long as it is current (for the encoded reply). */
export interface LiveAgent {
  json: string;
  stable: object;
}

// Per stored version, the live view last built and the status version it was built from.
const liveViews = new WeakMap<AgentRecord, { version: number; view: LiveAgent }>();

/**
 * The agent as a read shows it: the stored document, with each trigger's live status (when it last
 * started a run, when a poll next runs, why it last failed) filled in. The status is not part of the
 * document, so it does not change the stamp or the ETag. A view is rebuilt only when the agent's
 * trigger status version (raised in the transactions that change the status) has moved: a read of an
 * agent whose triggers did nothing since costs one point query. Null for an agent without triggers.
 */
export async function agentWithTriggerStatus(ctx: ServiceContext, record: AgentRecord): Promise<LiveAgent | null> {
  const triggers = record.document.triggers;
  const email = emailWithAddress(ctx, record);
  if (!triggers.length) {
    if (!email) return null;
    const known = liveViews.get(record);
    if (known) return known.view;
    const view = { json: JSON.stringify({ ...record.document, email }), stable: {} };
    liveViews.set(record, { version: -1, view });
    return view;
  }
  const version = await ctx.store.schedules.statusVersion(record.id);
  const known = liveViews.get(record);
  if (known?.version === version) return known.view;
  const lastStarted = await ctx.store.runs.lastStartedBy(triggers.map((t) => t.id));
  const polls = new Map((await ctx.store.schedules.ofOwner(record.id)).filter((s) => s.kind === 'poll').map((s) => [s.trigger_id, s]));
  const eventErrors = triggers.some((t) => t.kind === 'app_event') ? await ctx.store.appEvents.errors(record.id) : new Map();
  const withStatus = triggers.map((t) => {
    const poll = polls.get(t.id);
    const lastFiredAt = lastStarted.get(t.id) ?? null;
    // An app event's error stands until the trigger starts a run again.
    const eventError = eventErrors.get(t.id);
    const current = eventError && (lastFiredAt === null || eventError.at > lastFiredAt) ? eventError.error : null;
    return {
      ...t,
      last_fired_at: lastFiredAt,
      next_fire_at: poll?.next_due_at ? new Date(poll.next_due_at).toISOString() : null,
      last_error: poll?.last_error ?? current,
    };
  });
  const view = { json: JSON.stringify({ ...record.document, ...(email && { email }), triggers: withStatus }), stable: {} };
  liveViews.set(record, { version, view });
  return view;
}

/** The 409 of a write naming a WhatsApp connection another agent answers (one agent per number), or a mailbox another agent has. */
const channelTaken = (taken: ChannelTaken) =>
  conflict(
    taken.channel === 'email'
      ? `body.email.enabled: the address '${taken.address}@…' is another agent's (their slugs agree in the 53 characters an address carries); choose another slug to give this agent email`
      : `body.whatsapp.connection: connection '${taken.address}' is answered by another agent${taken.agentId ? ` (${taken.agentId})` : ''}; one agent answers a WhatsApp number`,
  );

/** The agent's email member with its address (read-only, not stored: docs/channels.md), or null while email is off. */
function emailWithAddress(ctx: ServiceContext, record: AgentRecord): Agent['email'] | null {
  const email = record.document.email;
  return email.enabled ? { ...email, address: `${agentMailbox(record.workspaceId, record.slug)}@${ctx.channels.emailDomain}` } : null;
}

/** The stored document as a write's reply shows it: with its email address while email is enabled. */
function withEmailAddress(ctx: ServiceContext, record: AgentRecord): Serialized<Agent> {
  const email = emailWithAddress(ctx, record);
  return email ? (JSON.stringify({ ...record.document, email }) as Serialized<Agent>) : record.json;
}
