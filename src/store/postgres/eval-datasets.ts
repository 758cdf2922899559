// The workspaces' eval datasets on PostgreSQL, kept by the document table (documents.ts) as skills
// are: the slug in the `slug` column as a workflow's, the dataset's version in its own JSON, one
// statement per write (document-writes.ts), the list held while its version is the database's
// (list-versions.ts) and built as the other kinds' are (document-lists.ts).
import type { StampClock } from '../../domain/stamps';
import type { EvalDataset } from '../../domain/types';
import type { EvalDatasetRepository } from '../port';
import type { PgDatabase } from './database';
import { evalDatasetList } from './document-lists';
import { documentTable, nameColumn } from './documents';

export function pgEvalDatasetRepository(db: PgDatabase, clock: StampClock): EvalDatasetRepository {
  const table = documentTable<EvalDataset, undefined>(db, clock, {
    table: 'eval_datasets',
    shape: { identity: 'slug', carriesVersion: true },
    maxSlugLength: 80,
    columns: { name: (doc) => nameColumn(doc.name), cases: (doc) => doc.cases.length },
    followers: [],
  });
  return {
    list: (workspaceId) => evalDatasetList(db, table.list, workspaceId),
    find: (workspaceId, ref) => table.find(workspaceId, ref),
    create: (workspaceId, id, doc, opts, meta) => table.create(workspaceId, id, doc, { ...opts, deriveSlug: false }, meta),
    replace: (workspaceId, id, expected, doc, meta) => table.replace(workspaceId, id, expected, doc, meta),
    remove: (workspaceId, id) => table.remove(workspaceId, id),
    versions: table.versions,
  };
}
