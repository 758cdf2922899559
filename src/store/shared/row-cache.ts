// The documents that reads asked for lately, by id, with their slugs, bounded by the bytes of their
// JSON (least recently read go first). Reads are most of the traffic, and looking a whole document
// up and parsing it again is most of a read's work (docs/benchmarks.md). With SQLite, this process is
// the only writer of these tables, and every write replaces or drops the rows it touches inside its
// own transaction (and a group that fails to commit clears the cache), so a row here is always the
// committed one and is answered as is. With PostgreSQL, other replicas write too: an entry is only
// answered after the database confirmed its stamp (postgres/documents.ts, heldFind).

interface Cacheable {
  id: string;
  workspaceId: string;
  slug: string;
  json: string;
}

export class RowCache<R extends Cacheable> {
  /** In order of last use, oldest first; `seq` says when the row was put at the newest end. */
  private readonly byId = new Map<string, { row: R; seq: number }>();
  private readonly idBySlug = new Map<string, string>();
  private bytes = 0;
  private seq = 0;

  constructor(private readonly maxBytes: number) {}

  private static key(workspaceId: string, ref: string): string {
    return `${workspaceId}\u0000${ref}`;
  }

  get(workspaceId: string, id: string): R | undefined {
    const key = RowCache.key(workspaceId, id);
    const entry = this.byId.get(key);
    if (!entry) return undefined;
    // Fewer than size/2 rows were put at the newest end since this one was: it is in the newer half,
    // which eviction reaches last, and is left where it is (a read of a hot row is one Map lookup,
    // not three). A row in the older half moves to the newest end.
    if (this.seq - entry.seq >= this.byId.size / 2) {
      this.byId.delete(key);
      entry.seq = ++this.seq;
      this.byId.set(key, entry);
    }
    return entry.row;
  }

  idOfSlug(workspaceId: string, slug: string): string | undefined {
    return this.idBySlug.get(RowCache.key(workspaceId, slug));
  }

  set(row: R): void {
    if (row.json.length > this.maxBytes) return;
    this.drop(row.workspaceId, row.id);
    this.byId.set(RowCache.key(row.workspaceId, row.id), { row, seq: ++this.seq });
    this.idBySlug.set(RowCache.key(row.workspaceId, row.slug), row.id);
    this.bytes += row.json.length;
    for (const [key, { row: oldest }] of this.byId) {
      if (this.bytes <= this.maxBytes) break;
      this.byId.delete(key);
      this.idBySlug.delete(RowCache.key(oldest.workspaceId, oldest.slug));
      this.bytes -= oldest.json.length;
    }
  }

  /** Forgets the row with this id (a write is changing or removing it). */
  drop(workspaceId: string, id: string): void {
    const key = RowCache.key(workspaceId, id);
    const entry = this.byId.get(key);
    if (!entry) return;
    this.byId.delete(key);
    this.idBySlug.delete(RowCache.key(workspaceId, entry.row.slug));
    this.bytes -= entry.row.json.length;
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
