// The version lists' held pages (services/version-pages.ts): a page is held only while pruning cannot
// reach it, and a document's new version names new pages.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
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
      for (let v = Math.min(before - 1, current); v >= 1 && listed.length < count; v--)
        if (!missing.includes(v)) listed.push({ version: v, json: `{"version":${v},"text":"v${v}"}` });
      return listed;
    };
    return { read, queries: () => queries };
  }

  /** A page as a client reads it: its items' version numbers and the version its next_cursor continues below. */
  function seen(built: BuiltVersionPage) {
    const body = JSON.parse(built.page.json) as { data: { version: number; text: string }[]; next_cursor: string | null };
    for (const item of body.data) expect(item.text).toBe(`v${item.version}`);
    expect(body.next_cursor).toBe(built.page.nextCursor);
    const next = body.next_cursor === null ? null : (JSON.parse(Buffer.from(body.next_cursor, 'base64url').toString()) as { v: number }).v;
    return { versions: body.data.map((item) => item.version), next, lowestRead: built.lowestRead };
  }

  /** What the page below `before` must be: the store's first `limit`, continued below the last when the store had one more. */
  async function expected(read: (before: number, count: number) => Promise<ListedVersion[]>, before: number, limit: number) {
    const listed = (await read(before, limit + 1)).map((v) => v.version);
    const versions = listed.slice(0, limit);
    return { versions, next: listed.length > limit ? versions[versions.length - 1]! : null, lowestRead: listed[listed.length - 1] ?? null };
  }

  test('a walk down the cursor reads each run once, and every page is what the store lists', async () => {
    const pages = new VersionPages(10_000);
    const direct = versionsOf(1_050);
    const held = versionsOf(1_050);
    for (const limit of [20, 7, 100, 1]) {
      let pagesWalked = 0;
      for (let before: number | null = 1_051; before !== null; pagesWalked++) {
        const page = seen(await pages.build('doc', 1_050, before, limit, held.read));
        expect(page).toEqual(await expected(direct.read, before, limit));
        before = page.next;
      }
      expect(pagesWalked).toBe(Math.ceil(1_050 / limit));
    }
    // Runs 0–9 (versions 1–1,000) read once each; the incomplete run (1,001–1,050) each time a page needs it.
    const pagesTouchingTheTop = 3 + 8 + 1 + 50;
    expect(held.queries()).toBe(10 + pagesTouchingTheTop);
  });

  test('a cursor above the current version lists from the current version down, as the store does', async () => {
    const pages = new VersionPages(10_000);
    const { read } = versionsOf(1_000);
    expect(seen(await pages.build('doc', 1_000, 5_000, 3, read))).toEqual({ versions: [1_000, 999, 998], next: 998, lowestRead: 997 });
    expect(seen(await pages.build('doc', 1_000, 101, 99, read))).toEqual(await expected(read, 101, 99));
    expect(seen(await pages.build('doc', 1_000, 101, 100, read))).toEqual({ versions: [...Array(100).keys()].map((k) => 100 - k), next: null, lowestRead: 1 });
    expect(seen(await pages.build('doc', 1_000, 1, 10, read))).toEqual({ versions: [], next: null, lowestRead: null });
  });

  test('runs pruning may reach are read on every page, never held', async () => {
    const pages = new VersionPages(KEPT); // current 1,000: pruning may delete up to 990
    const store = versionsOf(1_000, [500]);
    expect(seen(await pages.build('doc', 1_000, 505, 9, store.read))).toEqual({
      versions: [504, 503, 502, 501, 499, 498, 497, 496, 495],
      next: 495,
      lowestRead: 494,
    });
    await pages.build('doc', 1_000, 505, 9, store.read);
    expect(store.queries()).toBe(2);
  });

  test('a held run is no longer used once pruning can reach it', async () => {
    const pages = new VersionPages(200);
    const before = versionsOf(1_000);
    await pages.build('doc', 1_000, 851, 9, before.read); // run 8 (801–900) is above 800: held
    const after = versionsOf(1_200, [841, 842]); // the document moved on; pruning may have deleted below 1,000
    expect(seen(await pages.build('doc', 1_200, 851, 9, after.read)).versions).toEqual([850, 849, 848, 847, 846, 845, 844, 843, 840]);
  });

  test('a run missing a version (pruned by a replica keeping fewer) is not held; the page is what the store lists', async () => {
    const pages = new VersionPages(10_000);
    const store = versionsOf(1_000, [150]);
    expect(seen(await pages.build('doc', 1_000, 161, 69, store.read))).toEqual(await expected(store.read, 161, 69));
    await pages.build('doc', 1_000, 161, 69, store.read);
    expect(store.queries()).toBe(1 + 2 * 2); // the comparison's read; each page: the run, then the page as asked
  });

  test('the held runs stay within their byte budget', async () => {
    const pages = new VersionPages(10_000, VERSION_PAGES_BYTES, 5_000); // a run of 100 items takes ~2 × 2,700 + 400 + 256 bytes: none fits
    const store = versionsOf(1_000);
    await pages.build('doc', 1_000, 51, 4, store.read);
    await pages.build('doc', 1_000, 51, 4, store.read);
    expect(store.queries()).toBe(2);
  });

  test("a held page keeps none of a run's text alive once the run has gone", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const filler = 'x'.repeat(200);
    const documents = 400; // each run's text ~21 KB: ~8 MB if every page kept its run's
    const pages = new VersionPages(10_000, VERSION_PAGES_BYTES, 50_000); // two runs held at most
    const read = async (before: number, count: number): Promise<ListedVersion[]> => {
      const listed: ListedVersion[] = [];
      for (let v = before - 1; v >= 1 && listed.length < count; v--) listed.push({ version: v, json: `{"version":${v},"text":"${filler}"}` });
      return listed;
    };
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    for (let d = 0; d < documents; d++) await pages.get(`doc ${d}`, 200, 51, 1, () => pages.build(`doc ${d}`, 200, 51, 1, read));
    gc();
    const grown = process.memoryUsage().heapUsed - heapBefore;
    expect(grown).toBeLessThan(2_000_000); // the pages (~230 bytes each, and their keys) and two runs
    expect(JSON.parse((await pages.get('doc 0', 200, 51, 1, () => Promise.reject(new Error('not held')))).json).data[0].version).toBe(50);
  });
});
