// A SKILL.md file as the Agent Skills format writes it (agentskills.io): YAML front matter between
// two `---` lines, then the Markdown instructions. The front matter is tenant text: it is bounded
// before it is parsed, read with YAML's JSON schema (no custom types, no timestamps), and its shape
// is checked before anything walks it (an alias may name one node many times).
import yaml from 'js-yaml';
import { refusedTextIn } from './json-limits';
import type { Problem } from './types';

/** The most bytes of front matter read (larger is refused before it is parsed). */
export const FRONT_MATTER_BYTES = 16 * 1024;
/** The largest SKILL.md an import reads: the front matter, the instructions' 64 KiB, and room for the delimiters. */
export const SKILL_IMPORT_BYTES = 96 * 1024;

/** The path a front matter member's problem names. */
export const FRONT_MATTER = 'front matter';

/** The front matter's members a skill takes; `allowed-tools` is read and ignored. */
const MEMBERS = new Set(['name', 'description', 'license', 'compatibility', 'metadata']);
const IGNORED = new Set(['allowed-tools']);

const OPENING = /^---[ \t]*\r?\n/;
const CLOSING = /\r?\n---[ \t]*(?:\r?\n|$)/;

export type ParsedSkillFile = { ok: true; fields: Record<string, unknown>; body: string } | { ok: false; problem: Problem };

const refused = (path: string, message: string): ParsedSkillFile => ({ ok: false, problem: { path, message } });

/** The members of a SKILL.md's front matter and its instructions (`body`), or the one problem that stops reading it. */
export function parseSkillFile(text: string): ParsedSkillFile {
  if (text.includes('\u0000')) return refused('body', 'must not contain the character U+0000 (NUL)');
  const opening = OPENING.exec(text);
  if (!opening) return refused('body', 'a SKILL.md starts with front matter: a line ---, YAML (name, description, ...), a line ---, then the instructions');
  const rest = text.slice(opening[0].length);
  // `---` right after the opening line: empty front matter.
  const closing = rest.startsWith('---') ? /^---[ \t]*(?:\r?\n|$)/.exec(rest) : CLOSING.exec(rest);
  if (!closing) return refused('body', 'the front matter has no closing --- line');
  const frontMatter = closing.index === 0 ? '' : rest.slice(0, closing.index);
  const bytes = Buffer.byteLength(frontMatter);
  if (bytes > FRONT_MATTER_BYTES) return refused(FRONT_MATTER, `is ${bytes} bytes; at most ${FRONT_MATTER_BYTES}`);
  let parsed: unknown;
  try {
    parsed = yaml.load(frontMatter, { schema: yaml.JSON_SCHEMA });
  } catch (err) {
    return refused(FRONT_MATTER, `is not valid YAML (${(err as Error).message.split('\n')[0]})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return refused(FRONT_MATTER, 'must be a YAML mapping (name: ..., description: ...)');
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (IGNORED.has(key)) continue;
    if (!MEMBERS.has(key))
      return refused(`${FRONT_MATTER}.${key.slice(0, 80)}`, `is not a member of a skill's front matter (${[...MEMBERS, ...IGNORED].join(', ')})`);
    // Only scalars and one level of metadata: what a walk below may read is bounded by the text.
    if (key !== 'metadata' && typeof value === 'object' && value !== null) return refused(`${FRONT_MATTER}.${key}`, 'must be a string');
    fields[key] = value;
  }
  const metadata = fields.metadata;
  if (metadata !== undefined && metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata)) {
    for (const [key, value] of Object.entries(metadata)) {
      if (typeof value === 'object' && value !== null) return refused(`${FRONT_MATTER}.metadata[${JSON.stringify(key.slice(0, 80))}]`, 'must be a string');
    }
  }
  const text_ = refusedTextIn(fields, FRONT_MATTER);
  if (text_) return refused(text_.path, text_.rule);
  return { ok: true, fields, body: rest.slice(closing.index + closing[0].length) };
}
