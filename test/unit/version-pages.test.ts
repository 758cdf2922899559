// The version lists' held pages (services/version-pages.ts): a page is held only while pruning cannot
// reach it, and a document's new version names new pages.
import { VERSION_PAGES_BYTES, VersionPages, type BuiltVersionPage, type ListedVersion } from '../../src/services/version-pages';
import type { Serialized } from '../../src/store/port';
import type { DocumentVersionPage } from '../../src/domain/types';

const KEPT = 10;

function builder(lowestRead: number | null) {
  let builds = 0;
  const build = async (): Promise<BuiltVersionPage> => {
    builds++;
    return { page: { json: `{"data":[],"next_cursor":null,"build":${builds}}` as Serialized<DocumentVersionPage>, nextCursor: null }, lowestRead };
  };
  return { build, builds: () => builds };
}

test('a page whose versions are all above current − VERSIONS_KEPT is built once and then answered as held', async () => {
  const pages = new VersionPages(KEPT);
  const b = builder(41); // current 50: pruning deletes nothing above 40
  const first = await pages.get('doc', 50, 51, 10, b.build);
  expect(await pages.get('doc', 50, 51, 10, b.build)).toBe(first);
  expect(b.builds()).toBe(1);
});

test('a page that read a version pruning may delete is built on every read', async () => {
  const pages = new VersionPages(KEPT);
  const b = builder(40); // current 50: version 40 may go
  await pages.get('doc', 50, 45, 10, b.build);
  await pages.get('doc', 50, 45, 10, b.build);
  expect(b.builds()).toBe(2);
});

test('a new current version, another cursor, limit or document name another page', async () => {
  const pages = new VersionPages(KEPT);
  const b = builder(45);
  await pages.get('doc', 50, 51, 5, b.build);
  await pages.get('doc', 51, 51, 5, b.build);
  await pages.get('doc', 50, 50, 5, b.build);
  await pages.get('doc', 50, 51, 6, b.build);
  await pages.get('other', 50, 51, 5, b.build);
  expect(b.builds()).toBe(5);
});

test('an empty page (the versions below the cursor are gone) is held: no version is ever added below it', async () => {
  const pages = new VersionPages(KEPT);
  const b = builder(null);
  await pages.get('doc', 50, 3, 10, b.build);
  await pages.get('doc', 50, 3, 10, b.build);
  expect(b.builds()).toBe(1);
});

test('the held pages stay within their byte budget: the page built longest ago goes first', async () => {
  const pages = new VersionPages(KEPT, 1_000); // each test page takes 2 × ~40 + 256 bytes: two fit
  const b = builder(45);
  await pages.get('doc', 50, 51, 1, b.build);
  await pages.get('doc', 50, 51, 2, b.build);
  await pages.get('doc', 50, 51, 3, b.build);
  await pages.get('doc', 50, 51, 1, b.build); // went first: built again
  await pages.get('doc', 50, 51, 3, b.build); // still held
  expect(b.builds()).toBe(4);
});

describe('runs of versions for the pages read once', () => {
  /** A document's versions 1..current but `missing`, listed as the store lists them; counts its queries. */
  function versionsOf(current: number, missing: number[] = []) {
    let queries = 0;
    const read = async (before: number, count: number): Promise<ListedVersion[]> => {
      queries++;
      const listed: ListedVersion[] = [];
      for (let v = Math.min(before - 1, current); v >= 1 && listed.length < count; v--) if (!missing.includes(v)) listed.push({ version: v, json: `{"version":${v}}` });
      return listed;
    };
    return { read, queries: () => queries };
  }
  const numbers = (listed: ListedVersion[]) => listed.map((v) => v.version);

  test('a walk down the cursor reads each run once, and every page is what the store lists', async () => {
    const pages = new VersionPages(10_000);
    const direct = versionsOf(1_050);
    const held = versionsOf(1_050);
    for (const limit of [20, 7, 100]) {
      for (let before = 1_051; before > 1; before -= limit) {
        expect(numbers(await pages.below('doc', 1_050, before, limit + 1, held.read))).toEqual(numbers(await direct.read(before, limit + 1)));
      }
    }
    // Runs 0–9 (versions 1–1,000) read once each; the incomplete run (1,001–1,050) each time a page needs it.
    const pagesTouchingTheTop = 3 + 8 + 1;
    expect(held.queries()).toBe(10 + pagesTouchingTheTop);
  });

  test('a cursor above the current version lists from the current version down, as the store does', async () => {
    const pages = new VersionPages(10_000);
    const { read } = versionsOf(1_000);
    expect(numbers(await pages.below('doc', 1_000, 5_000, 3, read))).toEqual([1_000, 999, 998]);
    expect(numbers(await pages.below('doc', 1_000, 101, 150, read))).toEqual(numbers(await read(101, 150)));
  });

  test('runs pruning may reach are read on every page, never held', async () => {
    const pages = new VersionPages(KEPT); // current 1,000: pruning may delete up to 990
    const store = versionsOf(1_000, [500]);
    expect(numbers(await pages.below('doc', 1_000, 505, 10, store.read))).toEqual([504, 503, 502, 501, 499, 498, 497, 496, 495, 494]);
    await pages.below('doc', 1_000, 505, 10, store.read);
    expect(store.queries()).toBe(2);
  });

  test('a held run is no longer used once pruning can reach it', async () => {
    const pages = new VersionPages(200);
    const before = versionsOf(1_000);
    await pages.below('doc', 1_000, 851, 10, before.read); // run 8 (801–900) is above 800: held
    const after = versionsOf(1_200, [841, 842]); // the document moved on; pruning may have deleted below 1,000
    expect(numbers(await pages.below('doc', 1_200, 851, 10, after.read))).toEqual([850, 849, 848, 847, 846, 845, 844, 843, 840, 839]);
  });

  test('a run missing a version (pruned by a replica keeping fewer) is not held; the page is what the store lists', async () => {
    const pages = new VersionPages(10_000);
    const store = versionsOf(1_000, [150]);
    expect(numbers(await pages.below('doc', 1_000, 161, 70, store.read))).toEqual(numbers(await store.read(161, 70)));
    await pages.below('doc', 1_000, 161, 70, store.read);
    expect(store.queries()).toBe(1 + 2 * 2); // the comparison's read; each page: the run, then the page as asked
  });

  test('the held runs stay within their byte budget', async () => {
    const pages = new VersionPages(10_000, VERSION_PAGES_BYTES, 6_000); // a run of 100 short items takes ~2 × 1,500 + 6,400 + 256 bytes: none fits
    const store = versionsOf(1_000);
    await pages.below('doc', 1_000, 51, 5, store.read);
    await pages.below('doc', 1_000, 51, 5, store.read);
    expect(store.queries()).toBe(2);
  });
});
