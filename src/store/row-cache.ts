// The rows of a document table that reads asked for lately, by id, with their slugs, bounded by
// the bytes of the documents they hold (least recently read go first). Reads are most of the
// traffic and the SQLite lookup of an 8 KiB document was the largest cost of a read left in the
// profile. This process is the only writer of these tables, and every write replaces or drops the
// rows it touches inside its own transaction (and a group that fails to commit clears the cache),
// so a row here is always the committed one.

interface CachedRow {
  id: string;
  workspace_id: string;
  slug: string;
  document: string;
}

export class RowCache<R extends CachedRow> {
  private readonly byId = new Map<string, R>();
  private readonly idBySlug = new Map<string, string>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  private static key(workspaceId: string, ref: string): string {
    return `${workspaceId}\u0000${ref}`;
  }

  get(workspaceId: string, id: string): R | undefined {
    const key = RowCache.key(workspaceId, id);
    const row = this.byId.get(key);
    if (row) {
      this.byId.delete(key); // most recently read last
      this.byId.set(key, row);
    }
    return row;
  }

  idOfSlug(workspaceId: string, slug: string): string | undefined {
    return this.idBySlug.get(RowCache.key(workspaceId, slug));
  }

  set(row: R): void {
    if (row.document.length > this.maxBytes) return;
    this.drop(row.workspace_id, row.id);
    this.byId.set(RowCache.key(row.workspace_id, row.id), row);
    this.idBySlug.set(RowCache.key(row.workspace_id, row.slug), row.id);
    this.bytes += row.document.length;
    for (const [key, oldest] of this.byId) {
      if (this.bytes <= this.maxBytes) break;
      this.byId.delete(key);
      this.idBySlug.delete(RowCache.key(oldest.workspace_id, oldest.slug));
      this.bytes -= oldest.document.length;
    }
  }

  /** Forgets the row with this id (a write is changing or removing it). */
  drop(workspaceId: string, id: string): void {
    const key = RowCache.key(workspaceId, id);
    const row = this.byId.get(key);
    if (!row) return;
    this.byId.delete(key);
    this.idBySlug.delete(RowCache.key(workspaceId, row.slug));
    this.bytes -= row.document.length;
  }

  clear(): void {
    this.byId.clear();
    this.idBySlug.clear();
    this.bytes = 0;
  }

  get size(): number {
    return this.byId.size;
  }
}
