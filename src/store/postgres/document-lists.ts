// The lists of agents, of workflows and of eval datasets on PostgreSQL: held per workspace by the
// replica that built them, answered again while the list's version is still the database's
// (list-versions.ts).
//
// Lists are built here, not by PostgreSQL: its json_agg and json_build_object put spaces in the
// text (`{"id" : …}, \n {…}`); JSON.stringify gives the compact bytes the list cases of the store's
// contract suite expect of both adapters (test/store/documents.test.ts), stamps by formatStamp.
import { formatStamp } from '../../domain/stamps';
import type { AgentListItem, EvalDatasetListItem, WorkflowListItem } from '../../domain/types';
import type { ListVersion, Serialized } from '../port';
import { listedName } from '../shared/documents';
import type { PgDatabase } from './database';
import { LIST_VERSION_SQL, type VersionedLists } from './list-versions';

/** The list's name: the column, or the document's when the column could not hold it (U+0000: see nameColumn in documents.ts). */
function listName(row: { name: string; document: string | null }): string {
  if (row.document === null) return row.name;
  return listedName((JSON.parse(row.document) as { name: string }).name);
}

/** The name column, and the document where that column had to change the name (rare: only then is the document read). */
const NAME_SQL = 'name, CASE WHEN strpos(name, chr(65533)) > 0 THEN document END AS document';

/** Every row carries the version of the snapshot the list was read in (an empty list has none to carry, and is not held). */
type Versioned<R> = R & { list_version: number };
const versionOf = (rows: Versioned<unknown>[]) => rows[0]?.list_version ?? null;

export function agentList(db: PgDatabase, lists: VersionedLists, workspaceId: string): Promise<ListVersion<AgentListItem[]>> {
  type ListRow = Versioned<{
    id: string;
    slug: string;
    name: string;
    document: string | null;
    status: string;
    stamp_us: number;
    team: string | null;
    folder: string | null;
  }>;
  return lists.get('agents', workspaceId, async () => {
    const rows = await db.rows<ListRow>(
      `SELECT id, slug, ${NAME_SQL}, status, stamp_us, team, folder, ${LIST_VERSION_SQL('agents')} AS list_version
       FROM agents WHERE workspace_id = $1 ORDER BY slug`,
      [workspaceId],
    );
    const items = rows.map((r) => ({
      id: r.id,
      slug: r.slug,
      name: listName(r),
      status: r.status,
      updated_at: formatStamp(r.stamp_us),
      space: { team: r.team },
      folder: r.folder,
    }));
    return { version: versionOf(rows), json: JSON.stringify(items) as Serialized<AgentListItem[]> };
  });
}

export function workflowList(db: PgDatabase, lists: VersionedLists, workspaceId: string): Promise<ListVersion<WorkflowListItem[]>> {
  type ListRow = Versioned<{ slug: string; name: string; document: string | null; enabled: number; version: number; stamp_us: number; team: string | null }>;
  return lists.get('workflows', workspaceId, async () => {
    const rows = await db.rows<ListRow>(
      `SELECT slug, ${NAME_SQL}, enabled, version, stamp_us, team, ${LIST_VERSION_SQL('workflows')} AS list_version FROM workflows WHERE workspace_id = $1 ORDER BY slug`,
      [workspaceId],
    );
    const items = rows.map((r) => ({
      slug: r.slug,
      name: listName(r),
      enabled: r.enabled === 1,
      version: r.version,
      updated_at: formatStamp(r.stamp_us),
      space: { team: r.team },
    }));
    return { version: versionOf(rows), json: JSON.stringify(items) as Serialized<WorkflowListItem[]> };
  });
}

export function evalDatasetList(db: PgDatabase, lists: VersionedLists, workspaceId: string): Promise<ListVersion<EvalDatasetListItem[]>> {
  type ListRow = Versioned<{ id: string; slug: string; name: string; document: string | null; cases: number; version: number; stamp_us: number }>;
  return lists.get('eval_datasets', workspaceId, async () => {
    const rows = await db.rows<ListRow>(
      `SELECT id, slug, ${NAME_SQL}, cases, version, stamp_us, ${LIST_VERSION_SQL('eval_datasets')} AS list_version
       FROM eval_datasets WHERE workspace_id = $1 ORDER BY slug`,
      [workspaceId],
    );
    const items = rows.map((r) => ({ id: r.id, slug: r.slug, name: listName(r), cases: r.cases, version: r.version, updated_at: formatStamp(r.stamp_us) }));
    return { version: versionOf(rows), json: JSON.stringify(items) as Serialized<EvalDatasetListItem[]> };
  });
}
