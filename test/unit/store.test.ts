import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, migrate } from '../../src/store/db';
import { createSqliteStore } from '../../src/store';
import { StampClock, formatStamp } from '../../src/domain/stamps';
import type { Agent } from '../../src/domain/types';
import { minimalAgent } from '../helpers/fixtures';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-store-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const agent = (id: string, slug: string): Agent =>
  ({ ...minimalAgent(slug), id, slug, status: 'draft', updated_at: '', reasoning_effort: null }) as Agent;

test('migrations apply once and are recorded; the file uses WAL', () => {
  const db = openDatabase(path.join(dir, 'a.db'));
  expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
  expect(db.prepare('SELECT version FROM schema_migrations').pluck().all()).toEqual([1, 2]);
  expect(migrate(db)).toEqual([]);
  db.close();
});

test('replace is compare-and-set on the stamp, and stamps and versions grow', async () => {
  const clock = new StampClock(() => 1_000_000);
  const store = createSqliteStore(openDatabase(path.join(dir, 'b.db')), clock);
  const created = await store.agents.create('ws', 'id-1', agent('id-1', 'a'), { deriveSlug: false, limit: 10 }, []);
  if (!created.ok) throw new Error('create failed');
  expect(created.record.document.updated_at).toBe(formatStamp(1_000_000));

  const first = await store.agents.replace('ws', 'id-1', created.record.stampMicros, { ...created.record.document, name: 'B' }, []);
  expect(first).toMatchObject({ ok: true, record: { version: 2, stampMicros: 1_000_001 } });

  const stale = await store.agents.replace('ws', 'id-1', created.record.stampMicros, { ...created.record.document, name: 'C' }, []);
  expect(stale.ok).toBe(false);
  expect(!stale.ok && stale.current?.document.name).toBe('B');

  expect(await store.agents.replace('other-ws', 'id-1', 1_000_001, created.record.document, [])).toEqual({ ok: false, current: null });
  store.close();
});

test('trigger rows follow the document', async () => {
  const store = createSqliteStore(openDatabase(path.join(dir, 'c.db')), new StampClock());
  const hook = (id: string) => ({ kind: 'webhook' as const, id, name: id, prompt: null, enabled: true, secret_prefix: null });
  const created = await store.agents.create('ws', 'id-1', { ...agent('id-1', 'a'), triggers: [hook('t1'), hook('t2')] }, { deriveSlug: false, limit: 10 }, [{ triggerId: 't1', hash: 'h1', prefix: 'whk_abcd' }]);
  if (!created.ok) throw new Error('create failed');
  expect((await store.agents.triggers('id-1')).map((t) => [t.id, t.secret_prefix])).toEqual([['t1', 'whk_abcd'], ['t2', null]]);
  await store.agents.replace('ws', 'id-1', created.record.stampMicros, { ...created.record.document, triggers: [hook('t2'), hook('t3')] }, []);
  expect((await store.agents.triggers('id-1')).map((t) => t.id).sort()).toEqual(['t2', 't3']);
  store.close();
});

test('a workspace starts with the initial credits; set overrides', async () => {
  const store = createSqliteStore(openDatabase(path.join(dir, 'd.db')), new StampClock());
  expect(await store.workspaces.credits('ws', 1000)).toBe(1000);
  expect(await store.workspaces.credits('ws', 5)).toBe(1000);
  await store.workspaces.setCredits('ws', 7);
  expect(await store.workspaces.credits('ws', 1000)).toBe(7);
  store.close();
});
