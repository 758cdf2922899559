// Agents and workflows: create (slugs, limits, sizes), find, list, replace (compare-and-set on the
// stamp), remove — each case on both adapters.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { adapters, useStore, replicated, type OpenedStore, type Store } from './adapters';
import { agent, createAgent, ok, opts, poll, unique, workflow, workspace } from './fixtures';
import { CREATOR, WRITER } from './fixtures';

const STAMP_TEXT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
const parsed = async (list: Promise<{ json: string }>) => JSON.parse((await list).json) as Record<string, unknown>[];

describe.each(adapters)('$name: documents', (adapter) => {
  const { store } = useStore(adapter);

  describe('create and find', () => {
    test('a create is version 1, stamped with its updated_at; found by id (any case) or slug, in its workspace only', async () => {
      const ws = workspace();
      const doc = agent('finder');
      const record = await createAgent(store, ws, doc);
      expect(record).toMatchObject({ id: doc.id, workspaceId: ws, slug: 'finder', version: 1 });
      expect(record.updatedAt).toMatch(STAMP_TEXT);
      expect(record.document.updated_at).toBe(record.updatedAt);
      expect(JSON.parse(record.json)).toEqual(record.document);
      for (const ref of [doc.id, doc.id.toUpperCase(), 'finder']) {
        const found = await store.agents.find(ws, ref);
        expect(found).toMatchObject({ id: doc.id, workspaceId: ws, slug: 'finder', version: 1, stampMicros: record.stampMicros, json: record.json });
        expect(found!.document).toEqual(record.document);
        expect(found!.updatedAt).toBe(record.updatedAt);
      }
      expect(await store.agents.find(workspace(), doc.id)).toBeNull();
      expect(await store.agents.find(workspace(), 'finder')).toBeNull();
      expect(await store.agents.find(ws, 'missing')).toBeNull();
      expect(await store.agents.find(ws, randomUUID())).toBeNull();
    });

    test('a ref with U+0000 (which PostgreSQL text cannot hold) finds nothing', async () => {
      const ws = workspace();
      await createAgent(store, ws, agent('nul'));
      expect(await store.agents.find(ws, 'nul\u0000')).toBeNull();
      expect(await store.workflows.find(ws, '\u0000')).toBeNull();
    });

    test('a workflow is found by id or slug, in its workspace only', async () => {
      const ws = workspace();
      const id = randomUUID();
      const record = await ok(store.workflows.create(ws, id, workflow('flow', { name: 'Flow' }), { limit: 10 }, CREATOR));
      expect(record).toMatchObject({ id, workspaceId: ws, slug: 'flow', version: 1, document: { name: 'Flow', slug: 'flow' } });
      expect(await store.workflows.find(ws, 'flow')).toMatchObject({ id, version: 1, json: record.json });
      expect(await store.workflows.find(ws, id.toUpperCase())).toMatchObject({ id, slug: 'flow' });
      expect(await store.workflows.find(workspace(), id)).toBeNull();
    });

    test('a slug in use is slug_taken; with deriveSlug the base is made unique (base, base-2, base-3)', async () => {
      const ws = workspace();
      await createAgent(store, ws, agent('dup'));
      const again = agent('dup');
      expect(await store.agents.create(ws, again.id, again, opts(), [], CREATOR)).toEqual({ ok: false, reason: 'slug_taken' });
      expect(await store.agents.find(ws, again.id)).toBeNull();
      const slugs: string[] = [];
      for (let i = 0; i < 3; i++) {
        const doc = agent('helper');
        const record = await ok(store.agents.create(ws, doc.id, doc, opts(100, true), [], CREATOR));
        expect(record.document.slug).toBe(record.slug);
        slugs.push(record.slug);
      }
      expect(slugs).toEqual(['helper', 'helper-2', 'helper-3']);
      expect((await store.agents.find(ws, 'helper-3'))!.slug).toBe('helper-3');
      // Workflows never derive: the slug is the caller's.
      await ok(store.workflows.create(ws, randomUUID(), workflow('wf'), { limit: 10 }, CREATOR));
      expect(await store.workflows.create(ws, randomUUID(), workflow('wf'), { limit: 10 }, CREATOR)).toEqual({ ok: false, reason: 'slug_taken' });
      // Another workspace has slugs of its own.
      await ok(store.workflows.create(workspace(), randomUUID(), workflow('wf'), { limit: 10 }, CREATOR));
    });

    test('the limit counts the workspace’s documents of the kind: limit_reached at it, checked before the slug', async () => {
      const ws = workspace();
      for (const slug of ['one', 'two']) await ok(store.agents.create(ws, randomUUID(), agent(slug), opts(2), [], CREATOR));
      const third = agent('three');
      expect(await store.agents.create(ws, third.id, third, opts(2), [], CREATOR)).toEqual({ ok: false, reason: 'limit_reached' });
      // Both refusals apply: the limit is the one reported (the order of checks both adapters keep).
      const taken = agent('one');
      expect(await store.agents.create(ws, taken.id, taken, opts(2), [], CREATOR)).toEqual({ ok: false, reason: 'limit_reached' });
      expect(JSON.parse((await store.agents.list(ws)).json)).toHaveLength(2);
      // Workflows count apart from agents, and another workspace apart from this one.
      await ok(store.workflows.create(ws, randomUUID(), workflow('wf'), { limit: 1 }, CREATOR));
      expect(await store.workflows.create(ws, randomUUID(), workflow('wf-2'), { limit: 1 }, CREATOR)).toEqual({ ok: false, reason: 'limit_reached' });
      await ok(store.agents.create(workspace(), third.id, third, opts(2), [], CREATOR));
    });

    test('maxBytes is checked on the stored JSON: too_large with its size, a derived suffix included; at the limit it is stored', async () => {
      const ws = workspace();
      const first = await ok(store.agents.create(ws, randomUUID(), agent('sized'), { deriveSlug: true, limit: 10 }, [], CREATOR));
      const doc = agent('sized');
      const exact = Buffer.byteLength(JSON.stringify({ ...doc, slug: 'sized-2', updated_at: first.updatedAt }));
      expect(await store.agents.create(ws, doc.id, doc, { deriveSlug: true, limit: 10, maxBytes: exact - 1 }, [], CREATOR)).toEqual({
        ok: false,
        reason: 'too_large',
        bytes: exact,
      });
      expect(await store.agents.find(ws, doc.id)).toBeNull();
      const stored = await ok(store.agents.create(ws, doc.id, doc, { deriveSlug: true, limit: 10, maxBytes: exact }, [], CREATOR));
      expect(stored.slug).toBe('sized-2');
      expect(Buffer.byteLength(stored.json)).toBe(exact);
      const wf = workflow('big-wf');
      const wfBytes = Buffer.byteLength(JSON.stringify({ ...wf, slug: 'big-wf', updated_at: first.updatedAt }));
      expect(await store.workflows.create(ws, randomUUID(), wf, { limit: 10, maxBytes: wfBytes - 1 }, CREATOR)).toEqual({
        ok: false,
        reason: 'too_large',
        bytes: wfBytes,
      });
    });

    test('a create with an id already used is a fault (it rejects), whatever the workspace', async () => {
      const ws = workspace();
      const doc = agent('first-of-id');
      await createAgent(store, ws, doc);
      await expect(store.agents.create(workspace(), doc.id, { ...doc, slug: 'second-of-id' }, opts(), [], CREATOR)).rejects.toMatchObject({
        message: expect.any(String),
      }); // (better-sqlite3's error may be of another realm's class)
      const id = randomUUID();
      await ok(store.workflows.create(ws, id, workflow('wf-id'), { limit: 10 }, CREATOR));
      await expect(store.workflows.create(ws, id, workflow('wf-id-2'), { limit: 10 }, CREATOR)).rejects.toMatchObject({ message: expect.any(String) }); // (better-sqlite3's error may be of another realm's class)
      expect(await store.workflows.find(ws, 'wf-id-2')).toBeNull();
      expect(await store.agents.find(ws, doc.id)).toMatchObject({ slug: 'first-of-id', version: 1 });
    });

    test('concurrent creates of one slug: one is created, the others are slug_taken (no exception)', async () => {
      const ws = workspace();
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, () => {
          const doc = agent('same');
          return store.agents.create(ws, doc.id, doc, opts(), [], CREATOR);
        }),
      );
      expect(outcomes.filter((o) => o.ok)).toHaveLength(1);
      expect(outcomes.filter((o) => !o.ok && o.reason === 'slug_taken')).toHaveLength(9);
      const flows = await Promise.all(Array.from({ length: 6 }, () => store.workflows.create(ws, randomUUID(), workflow('same-wf'), { limit: 100 }, CREATOR)));
      expect(flows.filter((o) => o.ok)).toHaveLength(1);
      expect(flows.filter((o) => !o.ok && o.reason === 'slug_taken')).toHaveLength(5);
    });

    test('concurrent creates under a limit create exactly the limit; concurrent derived slugs are all distinct', async () => {
      const ws = workspace();
      const outcomes = await Promise.all(
        Array.from({ length: 15 }, (_, i) => {
          const doc = agent(`limited-${i}`);
          return store.agents.create(ws, doc.id, doc, opts(5), [], CREATOR);
        }),
      );
      expect(outcomes.filter((o) => o.ok)).toHaveLength(5);
      expect(outcomes.filter((o) => !o.ok && o.reason === 'limit_reached')).toHaveLength(10);
      expect(JSON.parse((await store.agents.list(ws)).json)).toHaveLength(5);
      const other = workspace();
      const derived = await Promise.all(
        Array.from({ length: 8 }, () => {
          const doc = agent('helper');
          return store.agents.create(other, doc.id, doc, opts(100, true), [], CREATOR);
        }),
      );
      const slugs = derived.map((o) => (o.ok ? o.record.slug : `failed: ${JSON.stringify(o)}`));
      expect(new Set(slugs)).toEqual(new Set(['helper', ...Array.from({ length: 7 }, (_, i) => `helper-${i + 2}`)]));
    });
  });

  describe('lists', () => {
    test('an empty workspace lists []', async () => {
      const ws = workspace();
      expect((await store.agents.list(ws)).json).toBe('[]');
      expect((await store.workflows.list(ws)).json).toBe('[]');
    });

    test('agent items: id, slug, name, status, updated_at, space, folder, ordered by slug byte-wise; names kept exactly (escapes, non-ASCII, U+0000)', async () => {
      const ws = workspace();
      const names = ['Plain', 'Quote " and \\ back', 'Tab\tnew\nline \u0001 \u001f', 'Ünïcødé 雪 🙂', 'NUL \u0000 inside', '\ufffd kept'];
      const slugs = ['b', 'a-2', 'a', 'z9', 'a-10', 'c'];
      const records = new Map<string, { id: string; updatedAt: string }>();
      for (const [i, name] of names.entries()) {
        const record = await createAgent(
          store,
          ws,
          agent(slugs[i]!, { name, status: i % 2 ? 'active' : 'draft', space: { team: i % 3 ? null : 'finance' }, folder: i % 2 ? `payroll/${i}` : null }),
        );
        records.set(slugs[i]!, record);
      }
      const json = (await store.agents.list(ws)).json;
      const list = JSON.parse(json) as Record<string, unknown>[];
      // The bytes are JSON.stringify's: both adapters send the same text for the same documents.
      expect(json).toBe(JSON.stringify(list));
      expect(list.map((item) => item.slug)).toEqual(['a', 'a-10', 'a-2', 'b', 'c', 'z9']);
      for (const item of list) {
        const i = slugs.indexOf(item.slug as string);
        const record = records.get(item.slug as string)!;
        expect(Object.keys(item)).toEqual(['id', 'slug', 'name', 'status', 'updated_at', 'space', 'folder']);
        expect(item).toEqual({
          id: record.id,
          slug: slugs[i],
          name: names[i],
          status: i % 2 ? 'active' : 'draft',
          updated_at: record.updatedAt,
          space: { team: i % 3 ? null : 'finance' },
          folder: i % 2 ? `payroll/${i}` : null,
        });
      }
    });

    test('workflow items: slug, name, enabled, version, updated_at, space, ordered by slug; a replace moves an item between spaces', async () => {
      const ws = workspace();
      const off = await ok(store.workflows.create(ws, randomUUID(), workflow('b-off', { name: 'Off', enabled: false }), { limit: 10 }, CREATOR));
      const on = await ok(store.workflows.create(ws, randomUUID(), workflow('a-on', { name: 'NUL \u0000 in a workflow' }), { limit: 10 }, CREATOR));
      const replaced = await ok(store.workflows.replace(ws, on.id, on.stampMicros, { ...on.document, name: 'On, twice', space: { team: 'ops' } }, WRITER));
      const json = (await store.workflows.list(ws)).json;
      const list = JSON.parse(json) as Record<string, unknown>[];
      expect(json).toBe(JSON.stringify(list));
      expect(list).toEqual([
        { slug: 'a-on', name: 'On, twice', enabled: true, version: 2, updated_at: replaced.updatedAt, space: { team: 'ops' } },
        { slug: 'b-off', name: 'Off', enabled: false, version: 1, updated_at: off.updatedAt, space: { team: null } },
      ]);
      expect(Object.keys(list[0]!)).toEqual(['slug', 'name', 'enabled', 'version', 'updated_at', 'space']);
      const nul = await ok(store.workflows.create(ws, randomUUID(), workflow('c-nul', { name: 'NUL \u0000 in a workflow' }), { limit: 10 }, CREATOR));
      expect((await parsed(store.workflows.list(ws)))[2]).toEqual({
        slug: 'c-nul',
        name: 'NUL \u0000 in a workflow',
        enabled: true,
        version: 1,
        updated_at: nul.updatedAt,
        space: { team: null },
      });
    });

    it('a name with a lone surrogate lists as U+FFFD (no text either database holds); the document keeps it', async () => {
      const ws = workspace();
      const record = await createAgent(store, ws, agent('lone', { name: 'Lone \ud800 surrogate' }));
      expect((await parsed(store.agents.list(ws)))[0]!.name).toBe('Lone \ufffd surrogate');
      expect((await store.agents.find(ws, record.id))!.document.name).toBe('Lone \ud800 surrogate');
    });

    test('a list follows every write of its workspace (create, replace, status, remove), and only those', async () => {
      const ws = workspace();
      const other = workspace();
      await createAgent(store, other, agent('elsewhere'));
      const otherList = (await store.agents.list(other)).json;
      const created = await createAgent(store, ws, agent('a'));
      const flow = await ok(store.workflows.create(ws, randomUUID(), workflow('w', { name: 'One' }), { limit: 10 }, CREATOR));
      expect((await parsed(store.agents.list(ws))).map((a) => a.slug)).toEqual(['a']);
      expect((await parsed(store.workflows.list(ws))).map((w) => w.name)).toEqual(['One']);
      // Read again without a write between: the same list.
      expect((await store.agents.list(ws)).json).toBe((await store.agents.list(ws)).json);
      const renamed = await ok(
        store.agents.replace(ws, created.id, created.stampMicros, { ...created.document, name: 'Renamed', status: 'active' }, [], WRITER),
      );
      await ok(store.workflows.replace(ws, flow.id, flow.stampMicros, { ...flow.document, name: 'Two', enabled: false }, WRITER));
      expect((await parsed(store.agents.list(ws)))[0]).toMatchObject({ name: 'Renamed', status: 'active', updated_at: renamed.updatedAt });
      expect((await parsed(store.workflows.list(ws)))[0]).toMatchObject({ name: 'Two', enabled: false, version: 2 });
      await createAgent(store, ws, agent('b'));
      expect((await parsed(store.agents.list(ws))).map((a) => a.slug)).toEqual(['a', 'b']);
      expect(await store.workflows.remove(ws, flow.id)).toBe(true);
      expect((await store.workflows.list(ws)).json).toBe('[]');
      expect((await store.agents.list(other)).json).toBe(otherList);
    });
  });

  describe('replace', () => {
    test('compare-and-set on the stamp: the expected stamp writes version 2; a stale one changes nothing and returns what is stored', async () => {
      const ws = workspace();
      const created = await createAgent(store, ws, agent('cas'));
      const first = await ok(store.agents.replace(ws, created.id, created.stampMicros, { ...created.document, name: 'B' }, [], WRITER));
      expect(first).toMatchObject({ id: created.id, slug: 'cas', version: 2, document: { name: 'B' } });
      expect(first.stampMicros).toBeGreaterThan(created.stampMicros);
      expect(first.document.updated_at).toBe(first.updatedAt);
      const stale = await store.agents.replace(ws, created.id, created.stampMicros, { ...created.document, name: 'C' }, [], WRITER);
      expect(stale.ok).toBe(false);
      expect(!stale.ok && stale.current).toMatchObject({ version: 2, stampMicros: first.stampMicros, document: { name: 'B' } });
      expect(await store.agents.find(ws, 'cas')).toMatchObject({ version: 2, stampMicros: first.stampMicros, document: { name: 'B' } });
    });

    test('a replace in another workspace or of a missing document returns no current version', async () => {
      const ws = workspace();
      const created = await createAgent(store, ws, agent('missing'));
      expect(await store.agents.replace(workspace(), created.id, created.stampMicros, created.document, [], WRITER)).toEqual({ ok: false, current: null });
      expect(await store.agents.replace(ws, randomUUID(), created.stampMicros, created.document, [], WRITER)).toEqual({ ok: false, current: null });
      expect(await store.workflows.replace(ws, randomUUID(), 1, workflow('nothing'), WRITER)).toEqual({ ok: false, current: null });
      expect(await store.agents.find(ws, created.id)).toMatchObject({ version: 1 });
    });

    test('of concurrent replaces with one stamp, exactly one wins; every loser is told the winner’s version', async () => {
      const ws = workspace();
      const created = await createAgent(store, ws, agent('contested'));
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          store.agents.replace(ws, created.id, created.stampMicros, { ...created.document, name: `writer ${i}` }, [], WRITER),
        ),
      );
      const winners = outcomes.filter((o) => o.ok);
      expect(winners).toHaveLength(1);
      const stored = (await store.agents.find(ws, created.id))!;
      expect(stored.version).toBe(2);
      expect(winners[0]!.ok && stored.document.name).toBe(winners[0]!.ok && winners[0]!.record.document.name);
      for (const o of outcomes) if (!o.ok) expect(o.current).toMatchObject({ version: 2, stampMicros: stored.stampMicros });
    });

    test('stamps and versions strictly increase over successive replaces; the slug stays the stored one', async () => {
      const ws = workspace();
      let record = await ok(store.workflows.create(ws, randomUUID(), workflow('stamped'), { limit: 10 }, CREATOR));
      for (let i = 0; i < 10; i++) {
        const next = await ok(store.workflows.replace(ws, record.id, record.stampMicros, { ...record.document, name: `v${i}`, slug: `renamed-${i}` }, WRITER));
        expect(next.stampMicros).toBeGreaterThan(record.stampMicros);
        expect(next.version).toBe(record.version + 1);
        expect(next.slug).toBe('stamped');
        expect(next.document.slug).toBe('stamped');
        expect(next.document.updated_at).toMatch(STAMP_TEXT);
        record = next;
      }
      expect(await store.workflows.find(ws, 'stamped')).toMatchObject({ version: 11, document: { name: 'v9' } });
      expect(await store.workflows.find(ws, 'renamed-9')).toBeNull();
    });

    test('an agent’s status and a workflow’s enabled change with a replace, and are read back', async () => {
      const ws = workspace();
      const a = await createAgent(store, ws, agent('status'));
      const active = await ok(store.agents.replace(ws, a.id, a.stampMicros, { ...a.document, status: 'active' }, [], WRITER));
      expect((await store.agents.find(ws, a.id))!.document.status).toBe('active');
      await ok(store.agents.replace(ws, a.id, active.stampMicros, { ...active.document, status: 'archived' }, [], WRITER));
      expect((await parsed(store.agents.list(ws)))[0]!.status).toBe('archived');
      const w = await ok(store.workflows.create(ws, randomUUID(), workflow('toggle'), { limit: 10 }, CREATOR));
      await ok(store.workflows.replace(ws, w.id, w.stampMicros, { ...w.document, enabled: false }, WRITER));
      expect((await store.workflows.find(ws, 'toggle'))!.document.enabled).toBe(false);
    });
  });

  describe('remove', () => {
    test('a removed workflow is found by neither id nor slug; a second remove, or one in another workspace, is false; its slug is free again', async () => {
      const ws = workspace();
      const first = await ok(store.workflows.create(ws, randomUUID(), workflow('gone', { name: 'One' }), { limit: 10 }, CREATOR));
      expect((await store.workflows.find(ws, 'gone'))!.document.name).toBe('One'); // read once (a store may hold it now)
      expect(await store.workflows.remove(workspace(), first.id)).toBe(false);
      expect(await store.workflows.find(ws, first.id)).not.toBeNull();
      expect(await store.workflows.remove(ws, first.id)).toBe(true);
      expect(await store.workflows.remove(ws, first.id)).toBe(false);
      expect(await store.workflows.find(ws, 'gone')).toBeNull();
      expect(await store.workflows.find(ws, first.id)).toBeNull();
      expect(await store.workflows.replace(ws, first.id, first.stampMicros, first.document, WRITER)).toEqual({ ok: false, current: null });
      const second = await ok(store.workflows.create(ws, randomUUID(), workflow('gone', { name: 'Two' }), { limit: 10 }, CREATOR));
      expect(await store.workflows.find(ws, 'gone')).toMatchObject({ id: second.id, version: 1, document: { name: 'Two' } });
    });

    test('concurrent removes of one workflow: one is true', async () => {
      const ws = workspace();
      const w = await ok(store.workflows.create(ws, randomUUID(), workflow('twice'), { limit: 10 }, CREATOR));
      expect((await Promise.all([store.workflows.remove(ws, w.id), store.workflows.remove(ws, w.id)])).sort()).toEqual([false, true]);
    });
  });
});

// A raw transaction stands for another writer (a replica whose clock may be ahead).
describe.each(replicated)('$name only: documents against a raw writer', (adapter) => {
  let opened: OpenedStore;
  let store: Store;
  let client: pg.Client;
  beforeAll(async () => {
    opened = await adapter.open();
    store = opened.store;
    client = new pg.Client({ connectionString: opened.url! });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await opened?.close();
  });

  test('a stamp stored ahead of the clock: the next replace stamps past it', async () => {
    const ws = workspace();
    const record = await createAgent(store, ws, agent('ahead'));
    expect(Math.abs(record.stampMicros - Date.now() * 1000)).toBeLessThan(60_000_000); // this process's clock
    const ahead = record.stampMicros + 3_600_000_000;
    await client.query('UPDATE agents SET stamp_us = $1 WHERE id = $2', [ahead, record.id]);
    expect(await store.agents.replace(ws, record.id, ahead, record.document, [], WRITER)).toMatchObject({
      ok: true,
      record: { stampMicros: ahead + 1, version: 2 },
    });
  });

  test('a replace whose UPDATE waits for another writer that then commits changes nothing and returns that writer’s version', async () => {
    const ws = workspace();
    const pollId = unique('overtaken-poll');
    const record = await createAgent(store, ws, agent('overtaken', { status: 'active', triggers: [poll(pollId)] }));
    await client.query('BEGIN');
    try {
      await client.query('UPDATE agents SET version = 2, stamp_us = stamp_us + 1, document = $2 WHERE id = $1', [
        record.id,
        JSON.stringify({ ...record.document, name: 'other' }),
      ]);
      const pending = store.agents.replace(ws, record.id, record.stampMicros, { ...record.document, status: 'archived', triggers: [] }, [], WRITER);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await client.query('COMMIT');
      const outcome = await pending;
      expect(outcome.ok).toBe(false);
      expect(!outcome.ok && outcome.current).toMatchObject({ version: 2, stampMicros: record.stampMicros + 1, document: { name: 'other' } });
      // Nothing of the lost write landed: the poll's schedule is still there, active.
      expect((await store.schedules.ofOwner(record.id)).map((r) => [r.id, r.active])).toEqual([[`poll:${pollId}`, 1]]);
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    }
  });

  test('a replace by the store that holds the version writes only the rows its change touches; one by a store that holds none writes all: the rows end alike', async () => {
    const ws = workspace();
    const pollId = unique('kept-poll');
    const first = await createAgent(store, ws, agent('followed', { status: 'active', triggers: [poll(pollId)] }));
    const other = await opened.another(); // holds no version: its replace writes every follower
    const scheduleOf = async () =>
      (await client.query('SELECT next_due_at::float8 AS next_due_at, failures, last_output_hash, detector FROM schedules WHERE id = $1', [`poll:${pollId}`]))
        .rows[0];
    // The scheduler's state, which a write that does not touch the schedule must keep.
    await client.query(`UPDATE schedules SET next_due_at = 4102444800000, failures = 3, last_output_hash = 'seen' WHERE id = $1`, [`poll:${pollId}`]);
    const kept = { next_due_at: 4102444800000, failures: 3, last_output_hash: 'seen' };
    const second = await ok(store.agents.replace(ws, first.id, first.stampMicros, { ...first.document, instructions: 'held' }, [], WRITER));
    expect(await scheduleOf()).toMatchObject(kept);
    const third = await ok(other.agents.replace(ws, first.id, second.stampMicros, { ...second.document, instructions: 'not held' }, [], WRITER));
    expect(await scheduleOf()).toMatchObject(kept);
    // A changed detector is written by the holder too: its output and failures are forgotten.
    await store.agents.find(ws, first.id); // holds the third version
    await ok(store.agents.replace(ws, first.id, third.stampMicros, { ...third.document, triggers: [poll(pollId, { key: 'y' })] }, [], WRITER));
    expect(await scheduleOf()).toMatchObject({ next_due_at: 4102444800000, failures: 0, last_output_hash: null, detector: expect.stringContaining('"y"') });
  });

  test('a slug inserted past the create’s lock is caught by the unique constraint: slug_taken, not an exception', async () => {
    const ws = workspace();
    await client.query('BEGIN');
    try {
      await client.query(
        `INSERT INTO agents (id, workspace_id, slug, name, status, version, stamp_us, created_at, document) VALUES ($1, $2, 'raced', 'x', 'draft', 1, 1, 'now', '{}')`,
        [randomUUID(), ws],
      );
      const doc = agent('raced');
      const pending = store.agents.create(ws, doc.id, doc, opts(), [], CREATOR);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await client.query('COMMIT');
      expect(await pending).toEqual({ ok: false, reason: 'slug_taken' });
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  });
});
