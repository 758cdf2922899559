// The kept versions of documents: every create and replace keeps its version in the same write (its
// number, stamp, author, changes and the document as stored); a refused write keeps none; pages by
// number, newest first; a deleted workflow's versions go with it; pruning keeps the newest and
// those a run names — each case on both adapters, and a race of two replicas for one stamp.
import { randomUUID } from 'node:crypto';
import { adapters, useStore, type Store } from './adapters';
import { agent, CREATOR, createAgent, newRun, ok, queue, workflow, workspace, WRITER } from './fixtures';

/** Replaces the agent `n` times from its stored version, each with a new description; the records. */
async function replaceTimes(store: Store, ws: string, id: string, n: number) {
  const records = [];
  for (let i = 0; i < n; i++) {
    const current = (await store.agents.find(ws, id))!;
    records.push(
      await ok(
        store.agents.replace(ws, id, current.stampMicros, { ...current.document, description: `write ${i + 2}` }, [], {
          author: `user-${i + 2}`,
          changes: [`write ${i + 2}`],
        }),
      ),
    );
  }
  return records;
}

describe.each(adapters)('$name: document versions', (adapter) => {
  const { store, opened } = useStore(adapter);

  test('each write keeps its version: number, stamp, author, changes, and the document as stored', async () => {
    const ws = workspace();
    const created = await createAgent(store, ws, agent('kept'));
    const [second, third] = await replaceTimes(store, ws, created.id, 2);
    const listed = await store.agents.versions.list(created.id, null, 10);
    expect(listed).toEqual([
      { version: 3, stampMicros: third!.stampMicros, author: 'user-3', changesJson: JSON.stringify(['write 3']) },
      { version: 2, stampMicros: second!.stampMicros, author: 'user-2', changesJson: JSON.stringify(['write 2']) },
      { version: 1, stampMicros: created.stampMicros, author: WRITER.author, changesJson: JSON.stringify(WRITER.changes) },
    ]);
    for (const record of [created, second!, third!]) {
      const kept = await store.agents.versions.get(created.id, record.version);
      expect(kept).toMatchObject({ version: record.version, stampMicros: record.stampMicros, json: record.json });
    }
    expect(await store.agents.versions.get(created.id, 4)).toBeNull();
    expect(await store.agents.versions.get(randomUUID(), 1)).toBeNull();
    // Read from another replica (another connection on SQLite): what the database holds.
    const other = await opened.another();
    expect((await other.agents.versions.get(created.id, 2))!.json).toBe(second!.json);
  });

  test('a create is kept with the changes made of the document as stored (its derived slug)', async () => {
    const ws = workspace();
    await createAgent(store, ws, agent('derived'));
    const doc = agent('derived');
    const record = await ok(
      store.agents.create(ws, doc.id, doc, { deriveSlug: true, limit: 10 }, [], (stored) => ({ author: 'me', changes: [`created as ${stored.slug}`] })),
    );
    expect(record.slug).toBe('derived-2');
    expect(await store.agents.versions.list(doc.id, null, 10)).toEqual([
      { version: 1, stampMicros: record.stampMicros, author: 'me', changesJson: JSON.stringify(['created as derived-2']) },
    ]);
  });

  test('a refused write keeps no version: a stale stamp, a taken slug', async () => {
    const ws = workspace();
    const created = await createAgent(store, ws, agent('refused'));
    const stale = await store.agents.replace(ws, created.id, created.stampMicros - 1, created.document, [], WRITER);
    expect(stale.ok).toBe(false);
    const taken = agent('refused');
    expect(await store.agents.create(ws, taken.id, taken, { deriveSlug: false, limit: 10 }, [], CREATOR)).toEqual({ ok: false, reason: 'slug_taken' });
    expect((await store.agents.versions.list(created.id, null, 10)).map((v) => v.version)).toEqual([1]);
    expect(await store.agents.versions.list(taken.id, null, 10)).toEqual([]);
  });

  test('pages newest first below a version number, at most `limit`', async () => {
    const ws = workspace();
    const created = await createAgent(store, ws, agent('paged'));
    await replaceTimes(store, ws, created.id, 6);
    const numbers = async (before: number | null, limit: number) => (await store.agents.versions.list(created.id, before, limit)).map((v) => v.version);
    expect(await numbers(null, 3)).toEqual([7, 6, 5]);
    expect(await numbers(5, 3)).toEqual([4, 3, 2]);
    expect(await numbers(2, 3)).toEqual([1]);
    expect(await numbers(1, 3)).toEqual([]);
  });

  test('a workflow keeps its versions until it is deleted; then they go with it', async () => {
    const ws = workspace();
    const id = randomUUID();
    const created = await ok(store.workflows.create(ws, id, workflow('flow'), { limit: 10 }, CREATOR));
    await ok(store.workflows.replace(ws, id, created.stampMicros, { ...created.document, name: 'Renamed' }, WRITER));
    expect((await store.workflows.versions.list(id, null, 10)).map((v) => v.version)).toEqual([2, 1]);
    expect(JSON.parse((await store.workflows.versions.get(id, 2))!.json)).toMatchObject({ name: 'Renamed', slug: 'flow' });
    expect(await store.workflows.remove(ws, id)).toBe(true);
    expect(await store.workflows.versions.list(id, null, 10)).toEqual([]);
    expect(await store.workflows.versions.get(id, 1)).toBeNull();
  });

  test('pruning keeps each document’s newest `keep` and every version a run names', async () => {
    const ws = workspace();
    const created = await createAgent(store, ws, agent('pruned'));
    await replaceTimes(store, ws, created.id, 5); // versions 1..6
    await queue(store, newRun(randomUUID(), { kind: 'agent', workspaceId: ws, targetId: created.id, targetVersion: 2 }));
    // Other documents' versions count apart: this one's newest stays.
    const other = await createAgent(store, ws, agent('pruned-other'));
    // One at a time, as batches go on until none is left (other cases' documents are pruned too).
    for (let pass = 0; pass < 50 && (await store.agents.versions.prune(2, 1)) > 0; pass++);
    expect(await store.agents.versions.prune(2, 1)).toBe(0);
    expect((await store.agents.versions.list(created.id, null, 10)).map((v) => v.version)).toEqual([6, 5, 2]);
    expect((await store.agents.versions.list(other.id, null, 10)).map((v) => v.version)).toEqual([1]);
    // keep 1: never the current version.
    await store.agents.versions.prune(1, 100);
    expect((await store.agents.versions.list(created.id, null, 10)).map((v) => v.version)).toEqual([6, 2]);
  });

  test('two replicas replacing from one stamp: one write wins, one version is kept', async () => {
    const ws = workspace();
    const created = await createAgent(store, ws, agent('raced'));
    const other = await opened.another();
    const write = (s: Store, author: string) =>
      s.agents.replace(ws, created.id, created.stampMicros, { ...created.document, description: author }, [], { author, changes: [] });
    const outcomes = await Promise.all([write(store, 'a'), write(other, 'b')]);
    expect(outcomes.filter((o) => o.ok)).toHaveLength(1);
    const versions = await store.agents.versions.list(created.id, null, 10);
    expect(versions.map((v) => v.version)).toEqual([2, 1]);
    const winner = outcomes.find((o) => o.ok)!;
    expect(versions[0]!.author).toBe(winner.ok ? winner.record.document.description : null);
  });
});
