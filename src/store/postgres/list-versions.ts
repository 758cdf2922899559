// Each workspace's lists of agents, of workflows, of skills and of eval datasets, held by the replica
// that built them and answered again while the database says the list's version has not moved
// (migrations/003: a sum over shards that every document write adds to in its statement). The check
// is one coalesced query (coalesced-lookup.ts) sent after the read arrived, so a list is never
// answered after a write acknowledged before the read, whichever replica made it.
import type { ListVersion } from '../port';
import { BudgetedMap } from '../shared/budgeted-map';
import { CoalescedLookup } from './coalesced-lookup';
import type { PgDatabase } from './database';

export type ListedTable = 'agents' | 'workflows' | 'skills' | 'eval_datasets';

const SHARDS = 16;

/** The document's shard: from the last character of its id (a UUID's random bits). Each document write adds one to its shard's version (document-writes.ts). */
export const shardOf = (id: string): number => id.charCodeAt(id.length - 1) % SHARDS;

/** The statement's snapshot's version of the list: a column for the query that builds it (see VersionedLists.get). */
export const LIST_VERSION_SQL = (table: ListedTable) =>
  `(SELECT COALESCE(SUM(version), 0)::bigint FROM list_versions WHERE workspace_id = $1 AND tbl = '${table}')`;

/** What an entry holds besides its JSON (as list-cache.ts counts it: the encoded reply is kept as long). */
const ENTRY_OVERHEAD_BYTES = 256;

interface HeldList {
  version: number;
  list: ListVersion;
}

export class VersionedLists {
  private readonly held: BudgetedMap<string, HeldList>;
  private readonly versions: CoalescedLookup<{ workspaceId: string; table: ListedTable }, number>;

  constructor(db: PgDatabase, maxBytes: number) {
    this.held = new BudgetedMap(maxBytes, (h) => 2 * h.list.json.length + ENTRY_OVERHEAD_BYTES);
    this.versions = new CoalescedLookup(async (batch) => {
      const keys = [...batch.keys()];
      const asked = [...batch.values()];
      const rows = await db.rows<{ n: number; version: number }>(
        `SELECT t.n, COALESCE(SUM(v.version), 0)::bigint AS version
         FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t (workspace_id, tbl, n)
         LEFT JOIN list_versions AS v ON v.workspace_id = t.workspace_id AND v.tbl = t.tbl
         GROUP BY t.n`,
        [asked.map((q) => q.workspaceId), asked.map((q) => q.table)],
      );
      return new Map(rows.map((r) => [keys[r.n - 1] as string, r.version]));
    });
  }

  /**
   * The workspace's list: the one held when its version is still the database's, or the one
   * `build` reads (with the version of the snapshot it read in: LIST_VERSION_SQL, null when it read
   * no row to carry it: an empty list is not held), then held.
   */
  async get<T>(table: ListedTable, workspaceId: string, build: () => Promise<{ version: number | null; json: string }>): Promise<ListVersion<T>> {
    const key = `${workspaceId}\u0000${table}`;
    const held = this.held.get(key);
    if (held && held.version === (await this.versions.get(key, { workspaceId, table }))) return held.list as ListVersion<T>;
    const built = await build();
    const list: ListVersion<T> = { json: built.json as ListVersion<T>['json'] };
    // A read that raced a newer build leaves the newer one held.
    const now = this.held.get(key);
    if (built.version !== null && (!now || now.version <= built.version)) this.held.set(key, { version: built.version, list });
    return list;
  }
}
