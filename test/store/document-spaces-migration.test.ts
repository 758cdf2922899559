// PostgreSQL only: migrations 010 and 011 fill each document's space (its team) and folder, and
// each run's, from the stored text; those jsonb cannot read (U+0000 escaped in a name, from before
// requests refused it) by pattern. SQLite's 017 and 018 are tested in test/unit/version-texts.test.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migratePg } from '../../src/store/postgres/migrate';
import { pgMigrationsDir } from '../../src/paths';
import { createPgDatabase } from '../helpers/database';
import { openPgDatabase } from './adapters';

test('PostgreSQL: migrations 010 and 011 fill team and folder, by pattern where jsonb cannot read the text', async () => {
  const database = await createPgDatabase();
  const db = openPgDatabase(database.url, { max: 1 });
  const before = fs.mkdtempSync(path.join(os.tmpdir(), 'build-pg-migrations-'));
  try {
    for (const file of fs.readdirSync(pgMigrationsDir).filter((f) => f.endsWith('.sql') && Number(f.slice(0, 3)) < 10)) {
      fs.copyFileSync(path.join(pgMigrationsDir, file), path.join(before, file));
    }
    await migratePg(db, before);
    const documents: [string, string, string][] = [
      ['agents', 'a1', JSON.stringify({ kind: 'service.agent/v1', name: 'Plain', space: { team: 'finance' }, folder: 'payroll/monthly' })],
      ['agents', 'a2', '{"kind":"service.agent/v1","name":"N\\u0000UL","space":{"team":"ops"},"folder":"reports"}'],
      ['agents', 'a3', JSON.stringify({ kind: 'service.agent/v1', name: 'Shared', space: { team: null }, folder: null })],
      ['workflows', 'w1', '{"kind":"service.workflow/v1","name":"N\\u0000UL","space":{"team":"ops"},"steps":[{"args":{"space":{"team":"not-this"}}}]}'],
    ];
    for (const [table, id, document] of documents) {
      const extra = table === 'agents' ? ['status', "'draft'"] : ['enabled', '1'];
      await db.count(
        `INSERT INTO ${table} (id, workspace_id, slug, name, ${extra[0]}, version, stamp_us, created_at, document) VALUES ($1, 'ws', $1, 'x', ${extra[1]}, 1, 1, 'now', $2)`,
        [id, document],
      );
    }
    const run = (id: string, snapshot: string | null) =>
      db.count(
        `INSERT INTO runs (id, kind, workspace_id, started_by, target_id, status, source, request, state, accepted_at, snapshot)
         VALUES ($1, 'agent', 'ws', 'u', 'a1', 'succeeded', 'test', '{}', '{}', '2026-01-01T00:00:00Z', $2)`,
        [id, snapshot],
      );
    await run('r-team', documents[1]![2]);
    await run('r-shared', documents[2]![2]);
    await run('r-none', null);
    expect(await migratePg(db)).toEqual(expect.arrayContaining([10, 11]));
    expect(await db.rows('SELECT id, team FROM runs ORDER BY id')).toEqual([
      { id: 'r-none', team: null },
      { id: 'r-shared', team: null },
      { id: 'r-team', team: 'ops' },
    ]);
    const agents = await db.rows<{ id: string; team: string | null; folder: string | null }>('SELECT id, team, folder FROM agents ORDER BY id');
    expect(agents).toEqual([
      { id: 'a1', team: 'finance', folder: 'payroll/monthly' },
      { id: 'a2', team: 'ops', folder: 'reports' },
      { id: 'a3', team: null, folder: null },
    ]);
    expect(await db.rows('SELECT team FROM workflows')).toEqual([{ team: 'ops' }]);
  } finally {
    await db.close();
    await database.drop();
    fs.rmSync(before, { recursive: true, force: true });
  }
});
