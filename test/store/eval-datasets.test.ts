// The workspaces' eval datasets in the store: kept by the document tables as skills are, the slug as
// a workflow's and the version in the document; a taken slug and the limit refused; the list's JSON
// alike on both adapters (the number of cases, a name PostgreSQL's column cannot hold);
// compare-and-set replaces; a removal takes the versions with it — each case on both adapters.
import { randomUUID } from 'node:crypto';
import type { EvalDataset } from '../../src/domain/types';
import { adapters, useStore, type Store } from './adapters';
import { ok, workspace } from './fixtures';

const META = { author: 'writer', changes: ['written'] };

const dataset = (slug: string, cases = 1, name = `The ${slug} cases`): EvalDataset => ({
  kind: 'service.eval-dataset/v1',
  id: '',
  slug,
  version: 1,
  updated_at: '',
  name,
  description: null,
  cases: Array.from({ length: cases }, (_, i) => ({ id: `case-${i + 1}`, prompt: `Question ${i + 1}?` })),
});

const create = (store: Store, ws: string, doc: EvalDataset, limit = 100) => {
  const id = randomUUID();
  return store.evalDatasets.create(ws, id, { ...doc, id }, { limit }, () => META);
};

describe.each(adapters)('$name: eval datasets', (adapter) => {
  const { store, opened } = useStore(adapter);

  test('a create stores the dataset with its stamp and version 1, found by slug or id, in its workspace only', async () => {
    const ws = workspace();
    const created = await ok(create(store, ws, dataset('refunds')));
    expect(created.document).toMatchObject({ slug: 'refunds', version: 1, updated_at: created.updatedAt, id: created.id });
    expect(created.slug).toBe('refunds');
    expect((await store.evalDatasets.find(ws, 'refunds'))!.json).toBe(created.json);
    expect((await store.evalDatasets.find(ws, created.id))!.json).toBe(created.json);
    const elsewhere = workspace();
    expect(await store.evalDatasets.find(elsewhere, 'refunds')).toBeNull();
    expect(await store.evalDatasets.find(elsewhere, created.id)).toBeNull();
    expect((await store.evalDatasets.list(elsewhere)).json).toBe('[]');
  });

  test('a taken slug and the limit are refused, nothing written', async () => {
    const ws = workspace();
    await ok(create(store, ws, dataset('one')));
    expect(await create(store, ws, dataset('one', 2, 'Other'))).toEqual({ ok: false, reason: 'slug_taken' });
    expect(await create(store, ws, dataset('two'), 1)).toEqual({ ok: false, reason: 'limit_reached' });
    expect(JSON.parse((await store.evalDatasets.list(ws)).json)).toHaveLength(1);
  });

  test('the list: id, slug, name, the number of cases, version and stamp, by slug, as the same JSON text', async () => {
    const ws = workspace();
    const b = await ok(create(store, ws, dataset('b-set', 3)));
    const a = await ok(create(store, ws, dataset('a-set', 1, 'Nul \u0000 and é')));
    expect((await store.evalDatasets.list(ws)).json).toBe(
      JSON.stringify([
        { id: a.id, slug: 'a-set', name: 'Nul \u0000 and é', cases: 1, version: 1, updated_at: a.updatedAt },
        { id: b.id, slug: 'b-set', name: 'The b-set cases', cases: 3, version: 1, updated_at: b.updatedAt },
      ]),
    );
  });

  test('a replace is compare-and-set on the stamp and carries the next version; a stale one writes nothing', async () => {
    const ws = workspace();
    const created = await ok(create(store, ws, dataset('cas')));
    const replaced = await ok(
      store.evalDatasets.replace(ws, created.id, created.stampMicros, { ...created.document, name: 'New', cases: dataset('cas', 2).cases }, META),
    );
    expect(replaced.document).toMatchObject({ id: created.id, version: 2, name: 'New', updated_at: replaced.updatedAt });
    const lost = await store.evalDatasets.replace(ws, created.id, created.stampMicros, { ...created.document, name: 'Lost' }, META);
    expect(lost).toMatchObject({ ok: false, current: { version: 2, json: replaced.json } });
    const other = await opened.another();
    expect((await other.evalDatasets.find(ws, 'cas'))!.json).toBe(replaced.json);
    expect((await store.evalDatasets.versions.list(created.id, null, 10)).map((v) => [v.version, v.author])).toEqual([
      [2, 'writer'],
      [1, 'writer'],
    ]);
    expect((await store.evalDatasets.versions.get(created.id, 1))!.json).toBe(created.json);
    expect((await store.evalDatasets.versions.get(created.id, 2))!.json).toBe(replaced.json);
    expect(JSON.parse((await store.evalDatasets.list(ws)).json)[0]).toMatchObject({ name: 'New', cases: 2, version: 2 });
  });

  test('a removal takes the versions with it; the prune keeps the newest', async () => {
    const ws = workspace();
    const created = await ok(create(store, ws, dataset('gone')));
    let current = created;
    for (let i = 0; i < 3; i++)
      current = await ok(store.evalDatasets.replace(ws, created.id, current.stampMicros, { ...current.document, name: `v${i + 2}` }, META));
    await store.evalDatasets.versions.prune(2, 1000);
    expect((await store.evalDatasets.versions.list(created.id, null, 10)).map((v) => v.version)).toEqual([4, 3]);
    expect(await store.evalDatasets.remove(ws, created.id)).toBe(true);
    expect(await store.evalDatasets.find(ws, 'gone')).toBeNull();
    expect(await store.evalDatasets.find(ws, created.id)).toBeNull();
    expect(await store.evalDatasets.versions.list(created.id, null, 10)).toEqual([]);
    expect(await store.evalDatasets.versions.get(created.id, 4)).toBeNull();
    expect((await store.evalDatasets.list(ws)).json).toBe('[]');
    expect(await store.evalDatasets.remove(ws, created.id)).toBe(false);
  });
});
