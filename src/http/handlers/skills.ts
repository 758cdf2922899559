// Skill operations (docs/skills.md): read the validated request, call the service, shape the reply.
import { etagFor } from '../../domain/etag';
import type { components } from '../../../generated/api';
import * as skills from '../../services/skills';
import type { SkillWrite } from '../../services/skills';
import { nextLink } from './next-link';
import { withDocumentJson, type Handlers } from './types';

const writeResult = (write: SkillWrite) =>
  withDocumentJson<components['schemas']['SkillWriteResult']>(write.record.json, {
    applied: ['document'],
    changes: write.changes,
    version: write.record.version,
  });

const etag = (write: SkillWrite) => etagFor(write.record.updatedAt);

/** The reply of a write that replaced the skill (replace, restore). */
export const skillWriteReply = (write: SkillWrite) => ({ status: 200 as const, headers: { ETag: etag(write) }, rawData: writeResult(write) });

/** The reply of a write that created it (create, import). */
const created = (write: SkillWrite) => ({
  status: 201 as const,
  headers: { ETag: etag(write), Location: `/api/build/skills/${write.record.slug}` },
  rawData: writeResult(write),
});

export const skillHandlers: Pick<Handlers, 'listSkills' | 'createSkill' | 'importSkill' | 'getSkill' | 'replaceSkill' | 'deleteSkill'> = {
  listSkills: async ({ ctx, principal, query }) => {
    const page = skills.skillListPage(await ctx.store.skills.list(principal.workspaceId), query);
    return { status: 200, headers: nextLink('/api/build/skills', query, page.nextCursor), rawBody: page.body, stable: page.stable };
  },

  createSkill: async ({ ctx, principal, body }) => created(await skills.createSkill(ctx, principal, body)),

  // The body is the SKILL.md's text (text/markdown), which the spec's JSON types do not carry.
  importSkill: async ({ ctx, principal, body }) => created(await skills.importSkill(ctx, principal, body as unknown)),

  getSkill: async ({ ctx, principal, params }) => {
    const record = await skills.findSkill(ctx, principal, params.name);
    return { status: 200, headers: { ETag: etagFor(record.updatedAt) }, rawData: record.json, stable: record };
  },

  replaceSkill: async ({ ctx, principal, params, headers, body }) =>
    skillWriteReply(await skills.replaceSkill(ctx, principal, params.name, headers['if-match'] as string, body)),

  deleteSkill: async ({ ctx, principal, params }) => {
    await skills.deleteSkill(ctx, principal, params.name);
    return { status: 200, body: { data: null } };
  },
};
