// Workspace skills (docs/skills.md), in the Agent Skills format (agentskills.io): the rules a
// skill meets beyond its JSON schema, checked on whatever arrives (a JSON body, or a SKILL.md's
// front matter: skill-markdown.ts), the defaults a stored skill carries, and what a write changed.
// Skills are the whole workspace's (domain/spaces.ts): no space, and the name is the identity.
import { describeMembers } from './changes';
import type { Problem, Skill, SkillCreate } from './types';

/** The most skills a workspace may hold. */
export const SKILLS_PER_WORKSPACE = 100;
/** The most bytes (UTF-8) of a skill's instructions, and of one file's content. */
export const SKILL_TEXT_BYTES = 65_536;
/** The most files beside SKILL.md. */
export const SKILL_FILES = 20;
/** The most bytes of a skill as stored (its JSON, stamp and all). */
export const SKILL_STORED_BYTES = 512 * 1024;
/** The largest request body of a skill's create or replace (JSON escaping, and a client's layout). */
export const SKILL_REQUEST_BYTES = 1024 * 1024;

const NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const SEGMENT = /^[A-Za-z0-9._-]+$/;
/** A name of this form would be read as an id (paths take either). */
const UUID_FORM = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const LIMITS = { description: 1024, compatibility: 500, license: 200, metadataEntries: 32, metadataKey: 64, metadataValue: 1024, path: 200 };

/** What a skill's members must be, whatever brought them; `at(member)`: the path a problem names. */
export function skillProblems(input: Record<string, unknown>, at: (member: string) => string): Problem[] {
  const problems: Problem[] = [];
  const problem = (path: string, message: string) => problems.push({ path, message });
  const { name, description, body, metadata, files } = input;
  if (typeof name !== 'string') problem(at('name'), 'required, a string');
  else if (name.length < 1 || name.length > 64 || !NAME.test(name))
    problem(at('name'), `'${name.slice(0, 80)}' must be 1 to 64 lowercase letters, digits and hyphens, with no hyphen first, last or next to another`);
  else if (UUID_FORM.test(name)) problem(at('name'), `'${name}' has the form of a UUID, which names a skill by its id; choose another name`);
  if (typeof description !== 'string') problem(at('description'), 'required, a string');
  else if (description.trim() === '') problem(at('description'), 'must not be blank');
  else if (description.length > LIMITS.description) problem(at('description'), `must be at most ${LIMITS.description} characters`);
  if (typeof body !== 'string') problem(at('body'), 'required, a string (the Markdown instructions)');
  else if (Buffer.byteLength(body) > SKILL_TEXT_BYTES) problem(at('body'), `is ${Buffer.byteLength(body)} bytes of UTF-8; at most ${SKILL_TEXT_BYTES}`);
  for (const [member, limit] of [
    ['license', LIMITS.license],
    ['compatibility', LIMITS.compatibility],
  ] as const) {
    const value = input[member];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') problem(at(member), 'must be a string');
    else if (value.length > limit) problem(at(member), `must be at most ${limit} characters`);
  }
  if (metadata !== undefined) metadataProblems(metadata, at('metadata'), problem);
  if (files !== undefined) fileProblems(files, at('files'), problem);
  return problems;
}

function metadataProblems(metadata: unknown, path: string, problem: (path: string, message: string) => void): void {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    problem(path, 'must be a map of strings to strings');
    return;
  }
  const entries = Object.entries(metadata);
  if (entries.length > LIMITS.metadataEntries) problem(path, `must have at most ${LIMITS.metadataEntries} entries`);
  for (const [key, value] of entries.slice(0, LIMITS.metadataEntries + 1)) {
    const at = `${path}[${JSON.stringify(key.slice(0, 80))}]`;
    if (key.length < 1 || key.length > LIMITS.metadataKey) problem(at, `a key must be 1 to ${LIMITS.metadataKey} characters`);
    if (typeof value !== 'string') problem(at, 'must be a string');
    else if (value.length > LIMITS.metadataValue) problem(at, `must be at most ${LIMITS.metadataValue} characters`);
  }
}

function fileProblems(files: unknown, path: string, problem: (path: string, message: string) => void): void {
  if (!Array.isArray(files)) {
    problem(path, 'must be a list of { path, content }');
    return;
  }
  if (files.length > SKILL_FILES) {
    problem(path, `must have at most ${SKILL_FILES} files`);
    return;
  }
  const seen = new Set<string>();
  for (const [i, file] of (files as unknown[]).entries()) {
    const at = `${path}[${i}]`;
    if (typeof file !== 'object' || file === null) {
      problem(at, 'must be an object { path, content }');
      continue;
    }
    const { path: filePath, content } = file as Record<string, unknown>;
    if (typeof filePath !== 'string') problem(`${at}.path`, 'required: a string');
    else {
      const refusal = pathRefusal(filePath);
      if (refusal) problem(`${at}.path`, `'${filePath.slice(0, 200)}' ${refusal}`);
      else if (seen.has(filePath)) problem(`${at}.path`, `'${filePath}' names another file of this skill too; paths are unique`);
      seen.add(filePath);
    }
    if (typeof content !== 'string') problem(`${at}.content`, 'required: a string');
    else if (Buffer.byteLength(content) > SKILL_TEXT_BYTES)
      problem(`${at}.content`, `is ${Buffer.byteLength(content)} bytes of UTF-8; at most ${SKILL_TEXT_BYTES}`);
  }
}

/** Why a file's path may not be stored, or null. */
function pathRefusal(path: string): string | null {
  if (path.length < 1 || path.length > LIMITS.path) return `must be 1 to ${LIMITS.path} characters`;
  if (path.startsWith('/')) return 'must be relative to the skill (no leading /)';
  const segments = path.split('/');
  if (segments.some((s) => s === '')) return 'must not have an empty segment (// or a trailing /)';
  if (segments.some((s) => s === '.' || s === '..')) return 'must not have a . or .. segment: files stay inside the skill';
  if (segments.some((s) => !SEGMENT.test(s))) return 'must be segments of letters, digits, ., _ and - separated by /';
  if (path === 'SKILL.md') return 'is the skill itself (its body); name the file otherwise';
  return null;
}

/** The skill as stored, every member present, in the order reads show it; `id`, `version` and `updated_at` are the store's to set. */
export function materialiseSkill(input: SkillCreate, id: string, updatedAt: string): Skill {
  return {
    kind: 'service.skill/v1',
    id,
    name: input.name,
    version: 1,
    updated_at: updatedAt,
    description: input.description,
    license: input.license ?? null,
    compatibility: input.compatibility ?? null,
    metadata: input.metadata ?? {},
    body: input.body,
    files: (input.files ?? []).map((f) => ({ path: f.path, content: f.content })),
  };
}

const SKILL_SKIP = new Set(['updated_at', 'version', 'id']);

export function describeSkillChanges(before: Skill | null, after: Skill): string[] {
  if (!before) return [`skill '${after.name}' created`];
  const changes = describeMembers(before, after, SKILL_SKIP);
  return changes.length ? changes : ['no changes'];
}
