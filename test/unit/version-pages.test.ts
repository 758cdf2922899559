// The version lists' held pages (services/version-pages.ts): a page is held only while pruning cannot
// reach it, and a document's new version names new pages.
import { VersionPages, type BuiltVersionPage } from '../../src/services/version-pages';
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
