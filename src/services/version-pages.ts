// The version lists' pages as they were last built (services/versions.ts builds them). A page is
// named by its document, the document's current version, its cursor and its limit, and it reads the
// same for as long as the document keeps that current version: versions are immutable and a new one
// is always numbered above it. Only pruning could change it, and pruning deletes nothing above
// current − VERSIONS_KEPT (maintenance.ts), so a page is held only when every version it read is
// above that line. A write makes a new current version: the next list names other pages, and the
// old ones go as the budget needs room. Across replicas the current version is the one the request
// read, which the store confirms against other replicas' writes.
import type { DocumentVersionPage } from '../domain/types';
import { BudgetedMap } from '../store/shared/budgeted-map';
import type { Page } from './pages';

export type VersionPage = Page<DocumentVersionPage>;

/** A page as built, with the lowest version its query read (the next page's first included; null when it read none). */
export interface BuiltVersionPage {
  page: VersionPage;
  lowestRead: number | null;
}

/** What the held pages may take: their JSON text and the encoded replies kept with them (http/app.ts). */
export const VERSION_PAGES_BYTES = 8 * 1024 * 1024;

/** What an entry holds besides its JSON: its key, the objects and the map's slot. */
const ENTRY_OVERHEAD_BYTES = 256;

export class VersionPages {
  private readonly pages: BudgetedMap<string, VersionPage>;

  /** `versionsKept`: the VERSIONS_KEPT every replica prunes to. */
  constructor(
    private readonly versionsKept: number,
    maxBytes = VERSION_PAGES_BYTES,
  ) {
    this.pages = new BudgetedMap<string, VersionPage>(maxBytes, (page) => 2 * page.json.length + ENTRY_OVERHEAD_BYTES);
  }

  /** The page held for this document version, cursor and limit, or the one `build` makes now (held when pruning cannot reach it). */
  async get(documentId: string, currentVersion: number, before: number, limit: number, build: () => Promise<BuiltVersionPage>): Promise<VersionPage> {
    const key = `${documentId} ${currentVersion} ${before} ${limit}`;
    const held = this.pages.get(key);
    if (held) return held;
    const { page, lowestRead } = await build();
    if (lowestRead === null || lowestRead > currentVersion - this.versionsKept) this.pages.set(key, page);
    return page;
  }
}
