// The marketplace of skills: read-only skills the deployment offers every workspace, read once at
// start from a directory of skill folders in the Agent Skills layout (SKILLS_DIR: each folder a
// skill named as the folder, its SKILL.md, and text files beside it). Each skill meets the rules
// of a workspace skill (domain/skill.ts); one that does not stops the start, naming the file and
// the rule, so a deployment never serves half a shelf. Nothing is executed and nothing is read
// again after start: a run's skills.file answers from memory, from the files read here.
import fs from 'node:fs';
import path from 'node:path';
import { parseSkillFile, SKILL_IMPORT_BYTES } from '../../domain/skill-markdown';
import { SKILL_FILES, SKILL_TEXT_BYTES, skillProblems } from '../../domain/skill';

/** A skill of the marketplace, as agents name it (`skills`) and load it. */
export interface MarketplaceSkill {
  /** Its folder's name, which is its `name` too. */
  slug: string;
  name: string;
  description: string;
  /** Its front matter's `metadata.version`, or "1". */
  version: string;
  body: string;
  files: { path: string; content: string }[];
}

export interface SkillMarketplace {
  /** Every skill, by slug. */
  readonly skills: ReadonlyMap<string, MarketplaceSkill>;
}

export const EMPTY_MARKETPLACE: SkillMarketplace = { skills: new Map() };

/** The most skills a marketplace may offer. */
export const MARKETPLACE_SKILLS = 200;

/** A marketplace that could not be read: the start stops with it. */
export class MarketplaceError extends Error {}

/** Reads a text file of at most `max` bytes, as UTF-8 that round-trips (no binary files). */
function readText(file: string, max: number): string {
  const size = fs.statSync(file).size;
  if (size > max) throw new MarketplaceError(`${file}: ${size} bytes; a skill's text files are at most ${max} bytes`);
  const bytes = fs.readFileSync(file);
  const text = bytes.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(bytes)) throw new MarketplaceError(`${file}: not UTF-8 text; a skill's files are text`);
  return text;
}

/** The files of a skill folder besides SKILL.md, as paths relative to it; symbolic links are not followed. */
function filesOf(folder: string): { path: string; content: string }[] {
  const files: { path: string; content: string }[] = [];
  const walk = (dir: string, prefix: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isSymbolicLink()) throw new MarketplaceError(`${path.join(dir, entry.name)}: a symbolic link; a skill's files must be inside its folder`);
      if (entry.isDirectory()) walk(path.join(dir, entry.name), relative);
      else if (entry.isFile() && relative !== 'SKILL.md') {
        if (files.length === SKILL_FILES) throw new MarketplaceError(`${folder}: more than ${SKILL_FILES} files beside SKILL.md`);
        files.push({ path: relative, content: readText(path.join(dir, entry.name), SKILL_TEXT_BYTES) });
      }
    }
  };
  walk(folder, '');
  return files;
}

/** Reads one skill folder. */
function readSkill(folder: string): MarketplaceSkill {
  const slug = path.basename(folder);
  const file = path.join(folder, 'SKILL.md');
  if (!fs.existsSync(file)) throw new MarketplaceError(`${folder}: no SKILL.md`);
  const parsed = parseSkillFile(readText(file, SKILL_IMPORT_BYTES));
  if (!parsed.ok) throw new MarketplaceError(`${file}: ${parsed.problem.path}: ${parsed.problem.message}`);
  const files = filesOf(folder);
  const input = { ...parsed.fields, body: parsed.body, files };
  const problems = skillProblems(input, (member) => member);
  if (problems.length) throw new MarketplaceError(`${file}: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
  const name = parsed.fields.name as string;
  if (name !== slug) throw new MarketplaceError(`${file}: name '${name}' differs from its folder's name '${slug}' (the format wants them equal)`);
  const version = (parsed.fields.metadata as Record<string, string> | undefined)?.version ?? '1';
  return { slug, name, description: parsed.fields.description as string, version, body: parsed.body, files };
}

/** The skills of `dir` (each subfolder one). A missing directory is an empty marketplace only when `optional`. */
export function loadMarketplace(dir: string, optional: boolean): SkillMarketplace {
  if (!fs.existsSync(dir)) {
    if (optional) return EMPTY_MARKETPLACE;
    throw new MarketplaceError(`SKILLS_DIR ${dir} does not exist`);
  }
  const folders = fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  if (folders.length > MARKETPLACE_SKILLS) throw new MarketplaceError(`SKILLS_DIR ${dir}: more than ${MARKETPLACE_SKILLS} skills`);
  return { skills: new Map(folders.map((name) => [name, readSkill(path.join(dir, name))] as const)) };
}
