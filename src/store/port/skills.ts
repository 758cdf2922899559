// The workspaces' skills (docs/skills.md): documents kept whole as JSON like agents and workflows
// (port/documents.ts), named by their `name` (unique in the workspace), written by compare-and-set
// on their stamp, each write keeping its version.
import type { Skill, SkillListItem } from '../../domain/types';
import type { CreateOutcome, DocumentRecord, ListVersion, ReplaceOutcome, VersionMeta, VersionRepository } from './documents';

export type SkillRecord = DocumentRecord<Skill>;

export interface SkillRepository {
  /** The list items of the workspace, ordered by name, as JSON (sent as is). */
  list(workspaceId: string): Promise<ListVersion<SkillListItem[]>>;
  /** `ref` is an id (UUID) or a name. Null when the workspace has no such skill. */
  find(workspaceId: string, ref: string): Promise<SkillRecord | null>;
  /** `doc.name` is taken as is (`slug_taken` when in use); `meta`: the version's author and changes, stored in the same transaction. */
  create(
    workspaceId: string,
    id: string,
    doc: Skill,
    opts: { limit: number; maxBytes?: number },
    meta: (stored: Skill) => VersionMeta,
  ): Promise<CreateOutcome<Skill>>;
  replace(workspaceId: string, id: string, expectedStampMicros: number, doc: Skill, meta: VersionMeta): Promise<ReplaceOutcome<Skill>>;
  /** Deletes the skill and every version it kept. */
  remove(workspaceId: string, id: string): Promise<boolean>;
  /** The skills' kept versions (each write keeps one). */
  versions: VersionRepository<Skill>;
}
