// Each workspace's list of agents or workflows, as JSON, as the last read built it: building it (a
// JSON object and a formatted stamp per document) is most of a list's cost. Like the row cache (row-cache.ts), it relies on this process being the only writer
// of the documents: every write of a workspace's documents drops its list inside the write's
// transaction (the next read builds it from the committed rows; a drop is never wrong, so a group
// that fails to commit needs nothing more). Bounded by what the lists hold (see sizeOf); the list
// built longest ago goes first.
import { BudgetedMap } from './budgeted-map';
import type { ListVersion } from '../port';

/** What an entry holds besides its JSON: its key, the objects and the map's slot. */
const ENTRY_OVERHEAD_BYTES = 256;

/**
 * An entry's share of the budget: its JSON text, the reply the HTTP layer encodes from it (kept as
 * long as the list is: handlers/types.ts, `stable`), and the entry itself — so that many workspaces
 * with short lists, even empty ones, cannot outgrow the budget.
 */
const sizeOf = (list: ListVersion) => 2 * list.json.length + ENTRY_OVERHEAD_BYTES;

export class ListCache<T = unknown> {
  private readonly lists: BudgetedMap<string, ListVersion<T>>;

  constructor(maxBytes: number) {
    this.lists = new BudgetedMap<string, ListVersion<T>>(maxBytes, sizeOf);
  }

  /** The workspace's list: the one held, or the one `build` makes now (then held, within the budget). */
  get(workspaceId: string, build: () => string): ListVersion<T> {
    const held = this.lists.get(workspaceId);
    if (held) return held;
    const built: ListVersion<T> = { json: build() };
    this.lists.set(workspaceId, built);
    return built;
  }

  /** Forgets the workspace's list (a write is changing one of its documents). */
  drop(workspaceId: string): void {
    this.lists.delete(workspaceId);
  }
}
