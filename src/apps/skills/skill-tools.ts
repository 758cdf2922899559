// An agent's skills at run time, by progressive disclosure as the Agent Skills format intends: its
// system prompt lists the name and description of each skill it lists (`workspace_skills`, then
// the marketplace's `skills`), and two read-only tools bring one skill's instructions
// (`skills.load { name }`) or one of its files (`skills.file { name, path }`) into the
// conversation, where they count against the run's state like any tool output. The skills are
// read when the run starts (or resumes): a run loads the versions it listed, and records each one
// it loaded. A file is answered from the stored skill, by exact path: nothing is read from disk and
// nothing is executed.
import type { Skill } from '../../domain/types';
import { objectOf, ToolError, tool, type AppTool } from '../types';
export type { LoadedSkill } from '../types';
import type { SkillMarketplace } from './marketplace';

/** A skill an agent can load: a workspace's (its stored version) or the marketplace's. */
export interface LoadableSkill {
  name: string;
  description: string;
  source: 'workspace' | 'marketplace';
  version: string;
  body: string;
  files: readonly { path: string; content: string }[];
}

/**
 * The skills an agent lists, as they stand: its workspace skills (`find` reads one by name; a
 * deleted one is left out), then the marketplace's (a marketplace skill of the same name as a
 * workspace skill it lists is shadowed by it).
 */
export async function skillsOf(
  agent: { skills: string[]; workspace_skills: string[] },
  find: (name: string) => Promise<{ version: number; document: Skill } | null>,
  marketplace: SkillMarketplace,
): Promise<LoadableSkill[]> {
  const skills: LoadableSkill[] = [];
  for (const name of agent.workspace_skills) {
    const found = await find(name);
    if (!found) continue;
    const { description, body, files } = found.document;
    skills.push({ name, description, source: 'workspace', version: String(found.version), body, files });
  }
  const taken = new Set(skills.map((s) => s.name));
  for (const slug of agent.skills) {
    const skill = marketplace.skills.get(slug);
    if (skill && !taken.has(slug)) skills.push({ ...skill, name: slug, source: 'marketplace' });
  }
  return skills;
}

/** The system prompt's section that lists the skills (null without any). */
export function skillsInstructions(skills: readonly LoadableSkill[]): string | null {
  if (!skills.length) return null;
  const lines = skills.map((s) => `- ${s.name}: ${s.description}`);
  return [
    '## Skills',
    'You have these skills: instructions for particular tasks, loaded only when a task needs one.',
    'Before following a skill, load it with the tool skills.load { "name": ... }; read a file it names with skills.file { "name": ..., "path": ... }.',
    ...lines,
  ].join('\n');
}

/** The tools `skills.load` and `skills.file` over `skills`; each load and file read is reported to `ctx.loadedSkill`. */
export function skillTools(skills: readonly LoadableSkill[]): AppTool[] {
  const byName = new Map(skills.map((s) => [s.name, s] as const));
  const names = { type: 'string', enum: skills.map((s) => s.name), description: 'The skill, by name.' };
  const skillNamed = (name: unknown): LoadableSkill => {
    const skill = byName.get(name as string);
    if (!skill) throw new ToolError(`'${String(name)}' is not a skill of this agent (its skills: ${[...byName.keys()].join(', ')})`);
    return skill;
  };
  const load = tool(
    'skills.load',
    'Load a skill',
    "Brings one of the agent's skills into the conversation: its instructions, and the paths of its files.",
    'read',
    objectOf({ name: names }, ['name']),
    async (args, ctx) => {
      const skill = skillNamed(args.name);
      ctx.loadedSkill?.({ name: skill.name, source: skill.source, version: skill.version });
      const files = skill.files.map((f) => ({ path: f.path, bytes: Buffer.byteLength(f.content) }));
      return { name: skill.name, source: skill.source, version: skill.version, description: skill.description, instructions: skill.body, files };
    },
  );
  const file = tool(
    'skills.file',
    'Read a file of a skill',
    "Reads one file of one of the agent's skills (a path skills.load listed). Files are text to read, never to execute.",
    'read',
    objectOf({ name: names, path: { type: 'string', minLength: 1, maxLength: 200 } }, ['name', 'path']),
    async (args, ctx) => {
      const skill = skillNamed(args.name);
      const found = skill.files.find((f) => f.path === args.path);
      if (!found) {
        const paths = skill.files.map((f) => f.path).join(', ') || 'none';
        throw new ToolError(`'${String(args.path).slice(0, 200)}' is not a file of skill '${skill.name}' (its files: ${paths})`);
      }
      ctx.loadedSkill?.({ name: skill.name, source: skill.source, version: skill.version });
      return { name: skill.name, path: found.path, content: found.content };
    },
  );
  return [load, file];
}
