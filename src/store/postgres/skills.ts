// The workspaces' skills on PostgreSQL, kept by the document table (documents.ts) as agents and
// workflows are: the name in the `slug` column, the skill's version in its own JSON, one statement
// per write (document-writes.ts), the list held while its version is the database's (list-versions.ts).
import type { StampClock } from '../../domain/stamps';
import { formatStamp } from '../../domain/stamps';
import type { Skill, SkillListItem } from '../../domain/types';
import type { Serialized, SkillRepository } from '../port';
import type { PgDatabase } from './database';
import { documentTable } from './documents';
import { LIST_VERSION_SQL } from './list-versions';

export function pgSkillRepository(db: PgDatabase, clock: StampClock): SkillRepository {
  const table = documentTable<Skill, undefined>(db, clock, {
    table: 'skills',
    shape: { identity: 'name', carriesVersion: true },
    maxSlugLength: 64,
    columns: { description: (doc) => doc.description },
    followers: [],
  });
  type ListRow = { slug: string; description: string; version: number; stamp_us: number; list_version: number };
  return {
    // Built here, not by PostgreSQL, for the compact JSON both stores answer (see document-lists.ts).
    list: (workspaceId) =>
      table.list.get<SkillListItem[]>('skills', workspaceId, async () => {
        const rows = await db.rows<ListRow>(
          `SELECT slug, description, version, stamp_us, ${LIST_VERSION_SQL('skills')} AS list_version FROM skills WHERE workspace_id = $1 ORDER BY slug`,
          [workspaceId],
        );
        const items = rows.map((r) => ({ name: r.slug, description: r.description, version: r.version, updated_at: formatStamp(r.stamp_us) }));
        return { version: rows[0]?.list_version ?? null, json: JSON.stringify(items) as Serialized<SkillListItem[]> };
      }),
    find: (workspaceId, ref) => table.find(workspaceId, ref),
    create: (workspaceId, id, doc, opts, meta) => table.create(workspaceId, id, doc, { ...opts, deriveSlug: false }, meta),
    replace: (workspaceId, id, expected, doc, meta) => table.replace(workspaceId, id, expected, doc, meta),
    remove: (workspaceId, id) => table.remove(workspaceId, id),
    versions: table.versions,
  };
}
