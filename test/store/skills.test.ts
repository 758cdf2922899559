// The workspaces' skills in the store: kept by the document tables as agents and workflows are, the
// name as the slug and the version in the document; a taken name and the limit refused; the list's
// JSON alike on both adapters; compare-and-set replaces; a removal takes the versions with it; the
// prune keeps the newest — each case on both adapters.
import { randomUUID } from 'node:crypto';
import type { Skill } from '../../src/domain/types';
import { adapters, useStore, type Store } from './adapters';
import { ok, workspace } from './fixtures';

const META = { author: 'writer', changes: ['written'] };

const skill = (name: string, description = `The ${name} skill.`): Skill => ({
  kind: 'service.skill/v1',
  id: '',
  name,
  version: 1,
  updated_at: '',
  description,
  license: null,
  compatibility: null,
  metadata: {},
  body: '# Do it\n',
  files: [],
});

const create = (store: Store, ws: string, doc: Skill, limit = 100) => {
  const id = randomUUID();
  return store.skills.create(ws, id, { ...doc, id }, { limit }, () => META);
};

describe.each(adapters)('$name: skills', (adapter) => {
  const { store, opened } = useStore(adapter);

  test('a create stores the skill with its stamp and version 1, found by name or id', async () => {
    const ws = workspace();
    const created = await ok(create(store, ws, skill('pdf-forms')));
    expect(created.document).toMatchObject({ name: 'pdf-forms', version: 1, updated_at: created.updatedAt });
    expect(created.slug).toBe('pdf-forms');
    expect((await store.skills.find(ws, 'pdf-forms'))!.json).toBe(created.json);
    expect((await store.skills.find(ws, created.id))!.json).toBe(created.json);
    expect(await store.skills.find(workspace(), 'pdf-forms')).toBeNull();
  });

  test('a taken name and the limit are refused, nothing written', async () => {
    const ws = workspace();
    await ok(create(store, ws, skill('one')));
    expect(await create(store, ws, skill('one', 'other'))).toEqual({ ok: false, reason: 'slug_taken' });
    expect(await create(store, ws, skill('two'), 1)).toEqual({ ok: false, reason: 'limit_reached' });
    expect(JSON.parse((await store.skills.list(ws)).json)).toHaveLength(1);
  });

  test('the list: name, description, version and stamp, by name, as the same JSON text', async () => {
    const ws = workspace();
    const b = await ok(create(store, ws, skill('b-skill')));
    const a = await ok(create(store, ws, skill('a-skill')));
    expect((await store.skills.list(ws)).json).toBe(
      JSON.stringify([
        { name: 'a-skill', description: 'The a-skill skill.', version: 1, updated_at: a.updatedAt },
        { name: 'b-skill', description: 'The b-skill skill.', version: 1, updated_at: b.updatedAt },
      ]),
    );
  });

  test('a replace is compare-and-set on the stamp and carries the next version in the document', async () => {
    const ws = workspace();
    const created = await ok(create(store, ws, skill('cas')));
    const replaced = await ok(store.skills.replace(ws, created.id, created.stampMicros, { ...created.document, description: 'New.' }, META));
    expect(replaced.document).toMatchObject({ version: 2, description: 'New.', updated_at: replaced.updatedAt });
    const lost = await store.skills.replace(ws, created.id, created.stampMicros, { ...created.document, description: 'Lost.' }, META);
    expect(lost).toMatchObject({ ok: false, current: { version: 2 } });
    const other = await opened.another();
    expect((await other.skills.find(ws, 'cas'))!.json).toBe(replaced.json);
    expect((await store.skills.versions.get(created.id, 1))!.json).toBe(created.json);
    expect(JSON.parse((await store.skills.list(ws)).json)[0]).toMatchObject({ version: 2, description: 'New.' });
  });

  test('a removal takes the versions with it; the prune keeps the newest', async () => {
    const ws = workspace();
    const created = await ok(create(store, ws, skill('pruned')));
    let current = created;
    for (let i = 0; i < 3; i++) current = await ok(store.skills.replace(ws, created.id, current.stampMicros, { ...current.document, body: `v${i + 2}` }, META));
    await store.skills.versions.prune(2, 1000);
    expect((await store.skills.versions.list(created.id, null, 10)).map((v) => v.version)).toEqual([4, 3]);
    expect(await store.skills.remove(ws, created.id)).toBe(true);
    expect(await store.skills.find(ws, 'pruned')).toBeNull();
    expect(await store.skills.versions.get(created.id, 4)).toBeNull();
    expect(await store.skills.remove(ws, created.id)).toBe(false);
  });
});
