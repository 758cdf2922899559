// The workspaces' eval datasets on SQLite, kept by the document table (document-table.ts) as skills
// are: the slug in the `slug` column as a workflow's, the dataset's version in its own JSON. The
// list's `cases` is a column (the number of cases), so the list never reads the documents.
import type { StampClock } from '../../domain/stamps';
import type { EvalDataset, EvalDatasetListItem } from '../../domain/types';
import type { EvalDatasetRepository } from '../port';
import { listedName } from '../shared/documents';
import type { Db } from './database';
import { createDocumentTable } from './document-table';
import { STAMP_SQL } from './documents';
import type { GroupCommit } from './group-commit';

export function evalDatasetRepository(db: Db, commit: GroupCommit, clock: StampClock): EvalDatasetRepository {
  const table = createDocumentTable<EvalDataset, undefined, EvalDatasetListItem[]>(db, commit, clock, {
    table: 'eval_datasets',
    shape: { identity: 'slug', carriesVersion: true },
    maxSlugLength: 80,
    listSql: `SELECT json_group_array(json_object('id', id, 'slug', slug, 'name', name, 'cases', cases, 'version', version, 'updated_at', ${STAMP_SQL}))
      FROM (SELECT id, slug, name, cases, version, stamp_us FROM eval_datasets WHERE workspace_id = ? ORDER BY slug)`,
    columns: { name: (doc) => listedName(doc.name), cases: (doc) => doc.cases.length },
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
