// Workspace skills (docs/skills.md): read, list, create (from JSON or from a SKILL.md file),
// replace, restore and delete. Skills are the whole workspace's (domain/spaces.ts): every member
// sees every skill; an agent of any space may list one in `workspace_skills`.
import { randomUUID } from 'node:crypto';
import { STAMP_SIZED } from '../domain/agent';
import { describeSkillChanges, materialiseSkill, SKILL_STORED_BYTES, SKILLS_PER_WORKSPACE, skillProblems } from '../domain/skill';
import { FRONT_MATTER, parseSkillFile } from '../domain/skill-markdown';
import { sees } from '../domain/spaces';
import type { Skill, SkillCreate, SkillListItem, SkillReplace } from '../domain/types';
import { badRequest, conflict, notFound } from '../errors';
import type { ListVersion, SkillRecord } from '../store/port';
import { assertStampsMatch, staleConflict } from './concurrency';
import type { Principal, ServiceContext } from './context';
import { keyedListPage } from './keyed-list-pages';
import { jsonBytes, rejectProblems } from './references';
import { keptVersion, restoredNote } from './versions';

export interface SkillWrite {
  record: SkillRecord;
  changes: string[];
}

/** Where a problem of a member is named: `body.<member>` for a JSON body; a SKILL.md's front matter members as `front matter.<member>`. */
type PathOf = (member: string) => string;
const inBody: PathOf = (member) => `body.${member}`;
const inSkillFile: PathOf = (member) => (member === 'body' ? 'body' : `${FRONT_MATTER}.${member}`);

/** The skill `ref` (its name, or its id) names in the caller's workspace, or 404. */
export async function findSkill(ctx: ServiceContext, who: Principal, ref: string): Promise<SkillRecord> {
  const record = await ctx.store.skills.find(who.workspaceId, ref);
  if (!record) throw notFound(`skill '${ref}' not found in this workspace`);
  return record;
}

/** The rules the schema cannot state, and the size of the skill as it will be stored. */
function checked(input: SkillCreate, id: string, updatedAt: string, at: PathOf): Skill {
  rejectProblems(skillProblems(input as unknown as Record<string, unknown>, at));
  const doc = materialiseSkill(input, id, updatedAt);
  // Measured as stored: the stamp's and a large version's digits added.
  const bytes = jsonBytes({ ...doc, version: 2 ** 31 - 1, updated_at: STAMP_SIZED });
  if (bytes > SKILL_STORED_BYTES) throw badRequest(`body: the skill as stored is ${bytes} bytes; at most ${SKILL_STORED_BYTES} (512 KiB)`);
  return doc;
}

export async function createSkill(ctx: ServiceContext, who: Principal, body: SkillCreate, at: PathOf = inBody): Promise<SkillWrite> {
  const id = randomUUID();
  const doc = checked(body, id, '', at);
  const meta = (stored: Skill) => ({ author: who.userId, changes: describeSkillChanges(null, stored) });
  const outcome = await ctx.store.skills.create(who.workspaceId, id, doc, { limit: SKILLS_PER_WORKSPACE, maxBytes: SKILL_STORED_BYTES }, meta);
  if (!outcome.ok) {
    if (outcome.reason === 'too_large') throw badRequest(`body: the skill as stored is ${outcome.bytes} bytes; at most ${SKILL_STORED_BYTES} (512 KiB)`);
    throw outcome.reason === 'slug_taken'
      ? conflict(`${at('name')}: '${doc.name}' is taken in this workspace; choose another name`)
      : conflict(`this workspace has reached its limit of ${SKILLS_PER_WORKSPACE} skills`);
  }
  return { record: outcome.record, changes: describeSkillChanges(null, outcome.record.document) };
}

/** A skill created from a SKILL.md file's text (front matter and instructions). */
export async function importSkill(ctx: ServiceContext, who: Principal, text: unknown): Promise<SkillWrite> {
  if (typeof text !== 'string') throw badRequest('body: must be the text of a SKILL.md file');
  const parsed = parseSkillFile(text);
  if (!parsed.ok) return rejectProblems([parsed.problem]) as never;
  const { metadata, ...fields } = parsed.fields;
  // `metadata:` with nothing after it is YAML's null: no metadata.
  const input = { kind: 'service.skill/v1', ...fields, ...(metadata === null ? {} : { metadata }), body: parsed.body };
  return createSkill(ctx, who, input as SkillCreate, inSkillFile);
}

export async function replaceSkill(ctx: ServiceContext, who: Principal, ref: string, ifMatch: string, body: SkillReplace): Promise<SkillWrite> {
  const current = await findSkill(ctx, who, ref);
  assertStampsMatch({ ifMatch, bodyStamp: body.updated_at, stored: current.document, rule: 'utc-only' });
  if (body.name !== current.slug) {
    rejectProblems([
      { path: 'body.name', message: `'${body.name}' differs from the skill's name '${current.slug}' (the path's); a skill's name cannot change` },
    ]);
  }
  return replaceWith(ctx, who, current, body);
}

/** Writes the content of a kept version as a new version, as a replace with that body would. */
export async function restoreSkill(ctx: ServiceContext, who: Principal, ref: string, ifMatch: string, versionRef: string): Promise<SkillWrite> {
  const current = await findSkill(ctx, who, ref);
  assertStampsMatch({ ifMatch, stored: current.document, rule: 'utc-only' });
  const kept = await keptVersion(ctx.store.skills.versions, current, versionRef, 'skill');
  return replaceWith(ctx, who, current, JSON.parse(kept.json) as Skill, kept.version);
}

async function replaceWith(ctx: ServiceContext, who: Principal, current: SkillRecord, body: SkillCreate, restoredFrom?: number): Promise<SkillWrite> {
  const doc = checked(body, current.id, current.document.updated_at, inBody);
  const changes = [...(restoredFrom === undefined ? [] : [restoredNote(restoredFrom)]), ...describeSkillChanges(current.document, doc)];
  const outcome = await ctx.store.skills.replace(who.workspaceId, current.id, current.stampMicros, doc, { author: who.userId, changes });
  if (!outcome.ok) {
    throw staleConflict(
      `skill '${current.slug}' changed while this write was prepared; read it again and rebase your change`,
      outcome.current?.document ?? null,
    );
  }
  return { record: outcome.record, changes };
}

/** Deletes the skill, unless an agent lists it in `workspace_skills` (409 naming them, and nothing deleted). */
export async function deleteSkill(ctx: ServiceContext, who: Principal, ref: string): Promise<void> {
  const current = await findSkill(ctx, who, ref);
  const listing = await agentsListing(ctx, who, current.slug);
  if (listing.agents.length || listing.hidden) {
    const hidden = listing.hidden
      ? `${listing.agents.length ? '; and ' : ''}${listing.hidden} agent${listing.hidden === 1 ? '' : 's'} in spaces you do not see`
      : '';
    const named = listing.agents.length ? `agents ${listing.agents.join(', ')}` : '';
    throw conflict(`skill '${current.slug}' is listed in workspace_skills by ${named}${hidden}; remove it from them first`);
  }
  await ctx.store.skills.remove(who.workspaceId, current.id);
}

/**
 * The agents whose `workspace_skills` list skill `name`: the slugs of those the caller sees, and how
 * many others. Read from every agent of the workspace (a delete is rare; agents are bounded by the
 * workspace's limit), as services/app-usage.ts reads what uses an app.
 */
async function agentsListing(ctx: ServiceContext, who: Principal, name: string): Promise<{ agents: string[]; hidden: number }> {
  const found = { agents: [] as string[], hidden: 0 };
  for (const { slug } of JSON.parse((await ctx.store.agents.list(who.workspaceId)).json) as { slug: string }[]) {
    const agent = (await ctx.store.agents.find(who.workspaceId, slug))?.document;
    if (!agent?.workspace_skills.includes(name)) continue;
    if (sees(who, agent.space.team)) found.agents.push(slug);
    else found.hidden++;
  }
  return found;
}

/** A page of the workspace's skills, by name: the whole list without `limit` and `cursor`, else a keyset page. */
export const skillListPage = (list: ListVersion<SkillListItem[]>, query: { limit?: number | string; cursor?: string }) => keyedListPage(list, 'name', query);
