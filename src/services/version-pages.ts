// The version lists' pages as they were last built (services/versions.ts builds them). A page is
// named by its document, the document's current version, its cursor and its limit, and it reads the
// same for as long as the document keeps that current version: versions are immutable and a new one
// is always numbered above it. Only pruning could change it, and pruning deletes nothing above
// current − VERSIONS_KEPT (maintenance.ts), so a page is held only when every version it read is
// above that line. A write makes a new current version: the next list names other pages, and the
// old ones go as the budget needs room. Across replicas the current version is the one the request
// read, which the store confirms against other replicas' writes.
//
// A page read once (a client walking the cursor down) is built from runs of VERSION_RUN consecutive
// versions, each read whole by one query the first time a page needs it and held as one text, its
// items' JSON joined: the next pages of the walk need no query, and a page is a few slices of that
// text. A run is held only when it is complete (all of it at or below the current version) and
// above the prune line, for the reasons above; its key names no current version, as a complete run
// never changes until pruning can reach it, which every use checks again.
import type { DocumentVersionPage } from '../domain/types';
import { BudgetedMap } from '../store/shared/budgeted-map';
import { pageOf, pageOfItems, type Page } from './pages';

export type VersionPage = Page<DocumentVersionPage>;

/** A page as built, with the lowest version its query read (the next page's first included; null when it read none). */
export interface BuiltVersionPage {
  page: VersionPage;
  lowestRead: number | null;
}

/** What the held pages may take: their JSON text and the encoded replies kept with them (http/app.ts). */
export const VERSION_PAGES_BYTES = 8 * 1024 * 1024;

/** How many versions a held run spans: a page (at most 100 and the one after) spans at most three runs. */
export const VERSION_RUN = 100;

/** What the held runs may take (their items' JSON). */
export const VERSION_RUNS_BYTES = 8 * 1024 * 1024;

/** One version as a list's item: its number and its JSON. */
export interface ListedVersion {
  version: number;
  json: string;
}

/** What an entry holds besides its JSON: its key, the objects and the map's slot. */
const ENTRY_OVERHEAD_BYTES = 256;

/** A held run: its versions' items, newest first, as one JSON text joined by commas, and where each item ends in it. */
interface HeldRun {
  text: string;
  ends: Uint32Array;
}

const runBytes = (run: HeldRun) => 2 * run.text.length + run.ends.byteLength + ENTRY_OVERHEAD_BYTES;

/** Reads the `count` versions below `before`, newest first, as the store lists them. */
export type VersionRead = (before: number, count: number) => Promise<ListedVersion[]>;

export class VersionPages {
  private readonly pages: BudgetedMap<string, VersionPage>;
  private readonly runs: BudgetedMap<string, HeldRun>;

  /** `versionsKept`: the VERSIONS_KEPT every replica prunes to. */
  constructor(
    private readonly versionsKept: number,
    maxBytes = VERSION_PAGES_BYTES,
    runsMaxBytes = VERSION_RUNS_BYTES,
  ) {
    this.pages = new BudgetedMap<string, VersionPage>(maxBytes, (page) => 2 * page.json.length + ENTRY_OVERHEAD_BYTES);
    this.runs = new BudgetedMap<string, HeldRun>(runsMaxBytes, runBytes);
  }

  /**
   * The page of `limit` versions below `before`, newest first, as `read` lists them: from the held
   * runs when every run it spans can be held (see above), each run read whole the first time;
   * otherwise from `read` now. Either reads the version after the page too, to tell whether a next
   * page exists.
   */
  async build(documentId: string, currentVersion: number, before: number, limit: number, read: VersionRead): Promise<BuiltVersionPage> {
    const top = Math.min(before - 1, currentVersion);
    const bottom = Math.max(1, top - limit); // the version after the page's last, when it has one
    const highest = runOf(top);
    const lowest = runOf(bottom);
    // The runs between are held if these two are: complete, and above the prune line.
    const holdable = (run: number) => (run + 1) * VERSION_RUN <= currentVersion && run * VERSION_RUN + 1 > currentVersion - this.versionsKept;
    if (top < 1 || !holdable(highest) || !holdable(lowest)) return pageRead(read, before, limit);
    const lastShown = Math.max(bottom, top - limit + 1);
    const items: string[] = [];
    for (let run = highest; run >= lowest; run--) {
      const held = await this.run(documentId, run, read);
      // A version missing where none can be (another replica pruning to fewer): as the store lists them.
      if (!held) return pageRead(read, before, limit);
      const runTop = (run + 1) * VERSION_RUN;
      const high = Math.min(top, runTop);
      const low = Math.max(lastShown, run * VERSION_RUN + 1);
      // A run's items are newest first: version v is item runTop − v.
      if (high >= low) items.push(held.text.slice(high === runTop ? 0 : held.ends[runTop - high - 1]! + 1, held.ends[runTop - low]));
    }
    return { page: pageOfItems<DocumentVersionPage>(items, bottom < lastShown ? { v: lastShown } : null), lowestRead: bottom };
  }

  /** Run `run` of the document's versions: held, or read now and held; null when it is not whole. */
  private async run(documentId: string, run: number, read: VersionRead): Promise<HeldRun | null> {
    const key = `${documentId} ${run}`;
    const held = this.runs.get(key);
    if (held) return held;
    const versions = await read((run + 1) * VERSION_RUN + 1, VERSION_RUN);
    // Whole: every version of the run, and none below it (a version missing would bring one).
    if (versions.length !== VERSION_RUN || versions[VERSION_RUN - 1]!.version !== run * VERSION_RUN + 1) return null;
    const ends = new Uint32Array(VERSION_RUN);
    let end = -1;
    for (const [k, v] of versions.entries()) ends[k] = end += 1 + v.json.length;
    const whole = { text: versions.map((v) => v.json).join(','), ends };
    this.runs.set(key, whole);
    return whole;
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

/** The page of `limit` versions below `before` as the store lists them now. */
async function pageRead(read: VersionRead, before: number, limit: number): Promise<BuiltVersionPage> {
  const versions = await read(before, limit + 1);
  return {
    page: pageOf<ListedVersion, DocumentVersionPage>(
      versions,
      limit,
      (v) => v.json,
      (last) => ({ v: last.version }),
    ),
    lowestRead: versions[versions.length - 1]?.version ?? null,
  };
}

/** The run version `version` is in (versions are numbered from 1). */
const runOf = (version: number) => Math.floor((version - 1) / VERSION_RUN);
