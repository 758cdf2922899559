// The workspaces' skills on SQLite, kept by the document table (document-table.ts) as agents and
// workflows are: the name in the `slug` column, the skill's version in its own JSON.
import type { StampClock } from '../../domain/stamps';
import type { Skill, SkillListItem } from '../../domain/types';
import type { SkillRepository } from '../port';
import type { Db } from './database';
import { createDocumentTable } from './document-table';
import { STAMP_SQL } from './documents';
import type { GroupCommit } from './group-commit';

export function skillRepository(db: Db, commit: GroupCommit, clock: StampClock): SkillRepository {
  const table = createDocumentTable<Skill, undefined, SkillListItem[]>(db, commit, clock, {
    table: 'skills',
    shape: { identity: 'name', carriesVersion: true },
    maxSlugLength: 64,
    listSql: `SELECT json_group_array(json_object('name', slug, 'description', description, 'version', version, 'updated_at', ${STAMP_SQL}))
      FROM (SELECT slug, description, version, stamp_us FROM skills WHERE workspace_id = ? ORDER BY slug)`,
    columns: { description: (doc) => doc.description },
  });
  return {
    list: async (workspaceId) => table.list(workspaceId),
    find: async (workspaceId, ref) => table.find(workspaceId, ref),
    create: (workspaceId, id, doc, opts, meta) => table.create(workspaceId, id, doc, { ...opts, deriveSlug: false }, meta),
    replace: (workspaceId, id, expected, doc, meta) => table.replace(workspaceId, id, expected, doc, meta),
    remove: (workspaceId, id) => table.remove(workspaceId, id),
    versions: table.versions,
  };
}
