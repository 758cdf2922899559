// The workspaces' eval datasets (docs/evals.md): documents kept whole as JSON like skills are
// (port/documents.ts), named by their `slug` (unique in the workspace) as workflows are, carrying
// their own `version` as skills do, written by compare-and-set on their stamp, each write keeping
// its version.
import type { EvalDataset, EvalDatasetListItem } from '../../domain/types';
import type { CreateOutcome, DocumentRecord, ListVersion, ReplaceOutcome, VersionMeta, VersionRepository } from './documents';

export type EvalDatasetRecord = DocumentRecord<EvalDataset>;

export interface EvalDatasetRepository {
  /** The list items of the workspace, ordered by slug, as JSON (sent as is). */
  list(workspaceId: string): Promise<ListVersion<EvalDatasetListItem[]>>;
  /** `ref` is an id (UUID) or a slug. Null when the workspace has no such dataset. */
  find(workspaceId: string, ref: string): Promise<EvalDatasetRecord | null>;
  /** `doc.slug` is taken as is (`slug_taken` when in use); `meta`: the version's author and changes, stored in the same transaction. */
  create(
    workspaceId: string,
    id: string,
    doc: EvalDataset,
    opts: { limit: number; maxBytes?: number },
    meta: (stored: EvalDataset) => VersionMeta,
  ): Promise<CreateOutcome<EvalDataset>>;
  replace(workspaceId: string, id: string, expectedStampMicros: number, doc: EvalDataset, meta: VersionMeta): Promise<ReplaceOutcome<EvalDataset>>;
  /** Deletes the dataset and every version it kept. */
  remove(workspaceId: string, id: string): Promise<boolean>;
  /** The datasets' kept versions (each write keeps one). */
  versions: VersionRepository<EvalDataset>;
}
