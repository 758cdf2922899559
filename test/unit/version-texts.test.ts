// SQLite keeps a version's text in a table of its own (migration 016): a list page reads the
// versions' small rows only, and no text outlives its version, whether the version is pruned or
// goes with its deleted document. A database written before the split keeps every text.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, migrate } from '../../src/store/sqlite/database';
import { migrationsDir } from '../../src/paths';
import { createSqliteStore } from '../../src/store/sqlite';
import { versionStatements } from '../../src/store/shared/versions';
import { StampClock } from '../../src/domain/stamps';
import { openSqlite } from '../../src/sqlite-driver';
import { agent, CREATOR, workflow, WRITER } from '../store/fixtures';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-versions-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Texts no version names. */
const orphans = (db: ReturnType<typeof openDatabase>, kind: 'agent' | 'workflow') =>
  db.prepare(`SELECT COUNT(*) FROM ${kind}_version_texts WHERE id NOT IN (SELECT text_id FROM ${kind}_versions)`).pluck().get();
const texts = (db: ReturnType<typeof openDatabase>, kind: 'agent' | 'workflow') => db.prepare(`SELECT COUNT(*) FROM ${kind}_version_texts`).pluck().get();

/** A database migrated up to, not including, migration `version` (as a service older than it left one). */
function databaseBefore(version: number): ReturnType<typeof openSqlite> {
  const before = path.join(dir, `before-${version}`);
  fs.mkdirSync(before);
  for (const file of fs.readdirSync(migrationsDir).filter((f) => f.endsWith('.sql') && Number(f.slice(0, 3)) < version))
    fs.copyFileSync(path.join(migrationsDir, file), path.join(before, file));
  const db = openSqlite(path.join(dir, `before-${version}.db`));
  db.pragma('foreign_keys = ON');
  migrate(db, before);
  return db;
}

test('a version list page reads the versions’ rows by their primary key, not their texts', () => {
  const db = openDatabase(path.join(dir, 'plan.db'));
  const plan = (db.prepare(`EXPLAIN QUERY PLAN ${versionStatements('agents').list}`).all({ id: 'a', before: 10, limit: 21 }) as { detail: string }[]).map(
    (r) => r.detail,
  );
  expect(plan).toEqual(['SEARCH agent_versions USING PRIMARY KEY (document_id=? AND version<?)']);
  db.close();
});

test('each write keeps one text; a pruned version’s text and a deleted workflow’s texts go with them', async () => {
  const db = openDatabase(path.join(dir, 'texts.db'));
  const store = createSqliteStore(db, new StampClock());
  const doc = agent('kept');
  const id = doc.id;
  const created = await store.agents.create('ws', doc.id, doc, { deriveSlug: false, limit: 10 }, [], CREATOR);
  if (!created.ok) throw new Error('create failed');
  let stamp = created.record.stampMicros;
  for (let i = 0; i < 4; i++) {
    const replaced = await store.agents.replace('ws', id, stamp, { ...created.record.document, description: `take ${i}` }, [], WRITER);
    if (!replaced.ok) throw new Error('replace failed');
    stamp = replaced.record.stampMicros;
  }
  expect(texts(db, 'agent')).toBe(5);
  expect((await store.agents.versions.get(id, 2))?.json).toContain('take 0');
  // Read from the table, not the row cache: the current version's text.
  const current = createSqliteStore(db, new StampClock());
  expect((await current.agents.find('ws', id))?.document.description).toBe('take 3');

  expect(await store.agents.versions.prune(2, 100)).toBe(3);
  expect(texts(db, 'agent')).toBe(2);
  expect(orphans(db, 'agent')).toBe(0);
  expect((await store.agents.versions.get(id, 5))?.json).toContain('take 3');

  const flowId = randomUUID();
  const flow = await store.workflows.create('ws', flowId, workflow('flow'), { limit: 10 }, CREATOR);
  if (!flow.ok) throw new Error('create failed');
  await store.workflows.replace('ws', flowId, flow.record.stampMicros, { ...flow.record.document, description: 'again' }, WRITER);
  expect(texts(db, 'workflow')).toBe(2);
  expect(await store.workflows.remove('ws', flowId)).toBe(true);
  expect(texts(db, 'workflow')).toBe(0);
  void store.close();
});

test('a database written before the split keeps each version’s text, and reads it after', () => {
  const db = databaseBefore(16);
  db.prepare(
    `INSERT INTO agents (id, workspace_id, slug, name, status, version, stamp_us, created_at) VALUES ('agt-1', 'ws', 'old', 'Old', 'draft', 2, 2, '2026-01-01T00:00:00Z')`,
  ).run();
  const keep = db.prepare('INSERT INTO agent_versions (document_id, version, stamp_us, author, changes, document) VALUES (?, ?, ?, ?, ?, ?)');
  keep.run('agt-1', 1, 1, 'alice', '["created"]', '{"v":1}');
  keep.run('agt-1', 2, 2, 'bob', '["replaced"]', '{"v":2}');
  expect(migrate(db)[0]).toBe(16); // and every migration after it
  expect(
    db.prepare('SELECT v.version, v.author, t.document FROM agent_versions AS v JOIN agent_version_texts AS t ON t.id = v.text_id ORDER BY v.version').all(),
  ).toEqual([
    { version: 1, author: 'alice', document: '{"v":1}' },
    { version: 2, author: 'bob', document: '{"v":2}' },
  ]);
  db.close();
});

test('migration 017 fills each document’s space and folder from its current version’s text', () => {
  const db = databaseBefore(17);
  const text = db.prepare('INSERT INTO agent_version_texts (document) VALUES (?)');
  const version = db.prepare('INSERT INTO agent_versions (document_id, version, stamp_us, author, changes, text_id) VALUES (?, ?, ?, NULL, ?, ?)');
  db.prepare(
    `INSERT INTO agents (id, workspace_id, slug, name, status, version, stamp_us, created_at) VALUES ('agt-1', 'ws', 'moved', 'Moved', 'draft', 2, 2, '2026-01-01T00:00:00Z')`,
  ).run();
  version.run('agt-1', 1, 1, '[]', text.run(JSON.stringify({ space: { team: 'old-team' }, folder: 'old' })).lastInsertRowid);
  version.run('agt-1', 2, 2, '[]', text.run(JSON.stringify({ space: { team: 'finance' }, folder: 'payroll/monthly' })).lastInsertRowid);
  db.prepare(
    `INSERT INTO workflows (id, workspace_id, slug, name, enabled, version, stamp_us, created_at) VALUES ('wf-1', 'ws', 'flow', 'Flow', 1, 1, 1, '2026-01-01T00:00:00Z')`,
  ).run();
  db.prepare('INSERT INTO workflow_versions (document_id, version, stamp_us, author, changes, text_id) VALUES (?, 1, 1, NULL, ?, ?)').run(
    'wf-1',
    '[]',
    db.prepare('INSERT INTO workflow_version_texts (document) VALUES (?)').run(JSON.stringify({ space: { team: null } })).lastInsertRowid,
  );
  expect(migrate(db)).toContain(17);
  expect(db.prepare('SELECT team, folder FROM agents').get()).toEqual({ team: 'finance', folder: 'payroll/monthly' });
  expect(db.prepare('SELECT team FROM workflows').get()).toEqual({ team: null });
  db.close();
});

test('migration 018 gives each run the space of the document it ran (its snapshot); a run without one stays the workspace’s', () => {
  const db = databaseBefore(18);
  const run = db.prepare(`INSERT INTO runs (id, kind, workspace_id, started_by, target_id, status, source, request, state, accepted_at, snapshot)
    VALUES (?, 'agent', 'ws', 'u', 'agt', 'succeeded', 'test', '{}', '{}', '2026-01-01T00:00:00Z', ?)`);
  run.run('r-team', JSON.stringify({ name: 'N\u0000UL', space: { team: 'finance' } }));
  run.run('r-shared', JSON.stringify({ space: { team: null } }));
  run.run('r-none', null);
  expect(migrate(db)).toContain(18);
  expect(db.prepare('SELECT id, team FROM runs ORDER BY id').all()).toEqual([
    { id: 'r-none', team: null },
    { id: 'r-shared', team: null },
    { id: 'r-team', team: 'finance' },
  ]);
  db.close();
});
