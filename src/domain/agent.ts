// Agent documents: defaults, read-only members, trigger identity and the stored shape. Pure: the
// caller supplies ids and stamps.
import type { Agent, AgentDraft, AgentReplace, AgentStatus, Problem, Trigger, TriggerInput } from './types';
import { trimBoth, trimEnd } from './text';
import { transliterate } from 'transliteration';

export interface Normalised<T> {
  document: T;
  changes: string[];
}

/** What a stored trigger contributes to the next write: its kind, and the display prefix of its secret. */
export interface StoredTrigger {
  id: string;
  kind: Trigger['kind'];
  secret_prefix: string | null;
  /** A webhook trigger's signing (null for other kinds). */
  signing: 'none' | 'standard-webhooks' | null;
}

/**
 * Fills defaults and drops read-only members of a request document, saying what it did. The result
 * lists members in the order of the schema, so stored and returned documents read the same way.
 */
export function normaliseAgent(input: AgentDraft): Normalised<AgentDraft> {
  const changes: string[] = [];
  if (input.status !== undefined) changes.push('status ignored: it is read-only (use POST /api/build/agents/{ref}/status)');
  if (input.reasoning_effort === undefined) changes.push("reasoning_effort defaulted to null (the model's default)");
  const { address, ...email } = input.email;
  if (address !== undefined) changes.push('email.address ignored: it is read-only (the service gives an agent its address while email is enabled)');
  const document: AgentDraft = {
    kind: input.kind,
    ...(input.id !== undefined && { id: input.id }),
    ...(input.slug !== undefined && { slug: input.slug }),
    ...(input.updated_at !== undefined && { updated_at: input.updated_at }),
    name: input.name,
    description: input.description,
    icon: input.icon,
    space: { team: input.space.team },
    folder: input.folder,
    instructions: input.instructions,
    model: input.model,
    max_steps: input.max_steps,
    reasoning_effort: input.reasoning_effort ?? null,
    tools: {
      apps: input.tools.apps,
      connections: input.tools.connections,
      disabled_tools: input.tools.disabled_tools,
      approval: input.tools.approval,
    },
    skills: input.skills,
    workspace_skills: input.workspace_skills,
    workflows: input.workflows,
    schedule: input.schedule,
    email,
    whatsapp: input.whatsapp,
    triggers: input.triggers.map((trigger, i) => normaliseTrigger(trigger, `triggers[${i}]`, changes)),
    eval_criteria: input.eval_criteria,
  };
  return { document, changes };
}

/** A trigger's live status members: a read shows them, a write ignores them. */
const TRIGGER_STATUS_MEMBERS = ['last_fired_at', 'next_fire_at', 'last_error'] as const;

function normaliseTrigger(input: TriggerInput, path: string, changes: string[]): TriggerInput {
  for (const member of TRIGGER_STATUS_MEMBERS) if (input[member] !== undefined) changes.push(`${path}.${member} ignored: it is read-only`);
  if (input.prompt === undefined) changes.push(`${path}.prompt defaulted to null`);
  if (input.enabled === undefined) changes.push(`${path}.enabled defaulted to true`);
  const common = {
    ...(input.id !== undefined && { id: input.id }),
    name: input.name,
    prompt: input.prompt ?? null,
    enabled: input.enabled ?? true,
  };
  switch (input.kind) {
    case 'webhook':
      if (input.secret_prefix !== undefined) changes.push(`${path}.secret_prefix ignored: it is read-only`);
      if (input.signing === undefined) changes.push(`${path}.signing defaulted to none`);
      return { kind: 'webhook', ...common, signing: input.signing ?? 'none' };
    case 'poll':
      if (input.args === undefined) changes.push(`${path}.args defaulted to {}`);
      return { kind: 'poll', ...common, tool: input.tool, args: input.args ?? {}, cron: input.cron, timezone: input.timezone };
    case 'app_event':
      return {
        kind: 'app_event',
        ...common,
        app: input.app,
        event: input.event,
        connection: input.connection,
        ...(input.key_prefix != null && { key_prefix: input.key_prefix }),
      };
  }
}

/**
 * The triggers a stored agent has, as its document names them: every write keeps the trigger rows
 * (agent_triggers) equal to the document's triggers in the same transaction, so the document that
 * a replace has read already answers what the rows would.
 */
export function storedTriggersOf(agent: Agent): StoredTrigger[] {
  return agent.triggers.map((t) => ({
    id: t.id,
    kind: t.kind,
    secret_prefix: t.kind === 'webhook' ? t.secret_prefix : null,
    signing: t.kind === 'webhook' ? (t.signing ?? 'none') : null,
  }));
}

/**
 * Gives every trigger its identity: a trigger with an `id` must be one the agent has, of the same
 * kind; a trigger without one is new and gets `newId()`. Problems are reported with their paths.
 */
export function assignTriggerIds(triggers: TriggerInput[], stored: StoredTrigger[], newId: () => string): { triggers: Trigger[]; problems: Problem[] } {
  const byId = new Map(stored.map((t) => [t.id, t]));
  const seen = new Set<string>();
  const problems: Problem[] = [];
  const result = triggers.map((trigger, i): Trigger => {
    const path = `body.triggers[${i}].id`;
    let id = trigger.id;
    let secretPrefix: string | null = null;
    if (id !== undefined) {
      const existing = byId.get(id);
      if (!existing) problems.push({ path, message: `'${id}' is not a trigger of this agent; omit id to add a new trigger` });
      else if (existing.kind !== trigger.kind) {
        problems.push({ path, message: `trigger '${id}' is a ${existing.kind} trigger; a trigger's kind cannot change (remove it and add a new one)` });
      } else secretPrefix = existing.secret_prefix;
      if (seen.has(id)) problems.push({ path, message: `'${id}' appears more than once` });
      seen.add(id);
    } else {
      id = newId();
    }
    const rest = withoutId(trigger);
    return trigger.kind === 'webhook' ? ({ ...rest, id, secret_prefix: secretPrefix } as Trigger) : ({ ...rest, id } as Trigger);
  });
  return { triggers: result.map(orderTrigger), problems };
}

/**
 * The body of a replace that restores `old` (a kept version) over `current`: the old members with
 * the current stamp. A trigger the current version still has (same id and kind) keeps its identity
 * (and a webhook its URL); one dropped since comes back as new: no id, so a new identity and, for a
 * webhook, a new URL. Status, id and slug are the current document's (the replace keeps them).
 */
export function restoreBody(old: Agent, current: Agent): AgentReplace {
  const { id: _id, slug: _slug, status: _status, updated_at: _stamp, triggers, ...members } = old;
  const live = new Map(current.triggers.map((t) => [t.id, t.kind]));
  const inputs = triggers.map((t): TriggerInput => {
    const input = (t.kind === 'webhook' ? (({ secret_prefix: _prefix, ...rest }) => rest)(t) : t) as TriggerInput;
    return live.get(t.id) === t.kind ? input : (withoutId(input) as TriggerInput);
  });
  return { ...members, updated_at: current.updated_at, triggers: inputs } as AgentReplace;
}

function withoutId(trigger: TriggerInput): Omit<TriggerInput, 'id'> {
  const { id: _id, ...rest } = trigger;
  return rest;
}

/** Members in schema order: kind, id, name, prompt, enabled, then the kind's own. */
function orderTrigger(t: Trigger): Trigger {
  const head = { kind: t.kind, id: t.id, name: t.name, prompt: t.prompt, enabled: t.enabled };
  switch (t.kind) {
    case 'webhook':
      return { ...head, kind: 'webhook', secret_prefix: t.secret_prefix, signing: t.signing };
    case 'poll':
      return { ...head, kind: 'poll', tool: t.tool, args: t.args, cron: t.cron, timezone: t.timezone };
    case 'app_event':
      return { ...head, kind: 'app_event', app: t.app, event: t.event, connection: t.connection, ...(t.key_prefix != null && { key_prefix: t.key_prefix }) };
  }
}

/** The stored document: a normalised draft plus the members the server owns. */
export function materialiseAgent(draft: AgentDraft, owned: { id: string; slug: string; status: AgentStatus; updated_at: string; triggers: Trigger[] }): Agent {
  return {
    kind: 'service.agent/v1',
    id: owned.id,
    slug: owned.slug,
    status: owned.status,
    updated_at: owned.updated_at,
    name: draft.name,
    description: draft.description,
    icon: draft.icon,
    space: draft.space,
    folder: draft.folder,
    instructions: draft.instructions,
    model: draft.model,
    max_steps: draft.max_steps,
    reasoning_effort: draft.reasoning_effort ?? null,
    tools: draft.tools,
    skills: draft.skills,
    workspace_skills: draft.workspace_skills,
    workflows: draft.workflows,
    schedule: draft.schedule,
    email: draft.email,
    whatsapp: draft.whatsapp,
    triggers: owned.triggers,
    eval_criteria: draft.eval_criteria,
  };
}

/** How many characters of a webhook secret the document shows (its `secret_prefix`). */
export const SECRET_PREFIX_LENGTH = 8;

/** Every stamp formatStamp makes, and every id (a UUID), has this length: a placeholder stands in for its size. */
export const STAMP_SIZED = '0000-00-00T00:00:00.000000Z';
const ID_SIZED = '00000000-0000-0000-0000-000000000000';

/**
 * The agent as it will be stored, with placeholders of the exact length for what the server has
 * not assigned yet (its id, new triggers' ids, new secrets' prefixes, the stamp): its size is the
 * stored document's, which is what the workspace's document_bytes limits.
 */
export function storedAgentShape(draft: AgentDraft, owned: { id?: string; slug: string; status: AgentStatus }): Agent {
  const triggers = draft.triggers.map((t) => {
    const id = t.id ?? ID_SIZED;
    const rest = withoutId(t);
    return orderTrigger(t.kind === 'webhook' ? ({ ...rest, id, secret_prefix: 'x'.repeat(SECRET_PREFIX_LENGTH) } as Trigger) : ({ ...rest, id } as Trigger));
  });
  return materialiseAgent(draft, { id: owned.id ?? ID_SIZED, slug: owned.slug, status: owned.status, updated_at: STAMP_SIZED, triggers });
}

/** A slug from a display name: lowercase ASCII letters and digits joined by single hyphens. */
export function slugFromName(name: string, maxLength = 160): string {
  // Transliterated first (a maintained table of every script: `straße` → `strasse`, `Привет` →
  // `privet`, `你好` → `ni-hao`), so that a name in any script gives a slug that still says it.
  const words = transliterate(name)
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-');
  const slug = trimEnd(trimBoth(words, '-').slice(0, maxLength), '-');
  return slug || 'agent';
}

/** `base`, or `base-2`, `base-3`, ... : the first that `taken` does not hold, within maxLength. */
export function firstFreeSlug(base: string, taken: (slug: string) => boolean, maxLength = 160): string {
  if (!taken(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const candidate = `${trimEnd(base.slice(0, maxLength - suffix.length), '-')}${suffix}`;
    if (!taken(candidate)) return candidate;
  }
}
