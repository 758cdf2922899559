// One server per database file, enforced: a second `build-api serve` on a file another one serves
// is refused at start with one line naming the file, while the CLI's short writes stay allowed; a
// killed server leaves no stale lock. And migrations are applied under the write lock, so processes
// starting together on a fresh file apply each exactly once.
// With PostgreSQL (TEST_STORE=postgres) there is no such lock: several servers on one database is
// the designed case (postgres-replicas.test.ts). A killed server must still leave nothing that keeps
// the next one from starting, and migrations are applied under an advisory lock, exactly once.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrationsDir, pgMigrationsDir, projectRoot } from '../../src/paths';
import { createPgDatabase, storeUnderTest } from '../helpers/database';
import { storedValue, type StoredAt } from '../helpers/stored';
import { startServer, type ServerProcess } from './server';

const bin = path.join(projectRoot, 'bin', 'build-api.js');
const cli = (args: string[], env: Record<string, string>) =>
  spawnSync(process.execPath, [bin, ...args], { env: { ...process.env, LOG_LEVEL: 'silent', ...env }, encoding: 'utf8', timeout: 20_000 });

let s: ServerProcess;
beforeAll(async () => {
  s = await startServer();
});
afterAll(() => s.dispose());

// Skipped with PostgreSQL: it has no single-server lock, as several servers on one database is its designed case.
(storeUnderTest === 'sqlite' ? test : test.skip)(
  'a second serve on the same file is refused with one line naming it; the first keeps serving; the CLI still writes',
  async () => {
    const second = cli(['serve'], { PORT: '0', DATABASE_PATH: s.databasePath });
    expect(second.status).toBe(1);
    expect(second.stderr).toBe(
      `build-api: ${s.databasePath} is already served by another build-api serve; stop it first, or set DATABASE_PATH to another file\n`,
    );
    expect(second.stdout).toBe('');

    expect((await fetch(`${s.baseUrl}/healthz`)).status).toBe(200);
    const created = await s.client().PUT('/api/build/workflows', {
      body: { kind: 'service.workflow/v1', slug: 'still-here', name: 'S', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] },
    });
    expect(created.response.status).toBe(201);

    const credits = cli(['credits', 'set', '--workspace', 'ws-cli', '--amount', '7'], { DATABASE_PATH: s.databasePath });
    expect([credits.status, credits.stdout]).toEqual([0, '{"workspace":"ws-cli","credits":7}\n']);
  },
  30_000,
);

test('a killed server leaves no lock behind: the next serve on the database starts and serves what was written', async () => {
  const written = await s.client().PUT('/api/build/workflows', {
    body: { kind: 'service.workflow/v1', slug: 'before-kill', name: 'B', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] },
  });
  expect(written.response.status).toBe(201);
  await s.kill('SIGKILL');
  await s.restart();
  expect((await fetch(`${s.baseUrl}/healthz`)).status).toBe(200);
  // And the first test's workflow, written while a second serve was refused (SQLite only: PostgreSQL skips that test).
  for (const ref of storeUnderTest === 'sqlite' ? ['still-here', 'before-kill'] : ['before-kill']) {
    expect([ref, (await s.client().GET('/api/build/workflows/{ref}', { params: { path: { ref } } })).response.status]).toEqual([ref, 200]);
  }
}, 30_000);

/** Runs `script` (its one argument: the database) in `count` processes at once; each prints the versions it applied. */
async function migrateTogether(script: string, database: string, count: number): Promise<{ code: number | null; out: string; err: string }[]> {
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
          const child = spawn(process.execPath, ['-e', script, database], { cwd: projectRoot });
          let out = '';
          let err = '';
          child.stdout.on('data', (c: Buffer) => (out += c));
          child.stderr.on('data', (c: Buffer) => (err += c));
          child.on('close', (code) => resolve({ code, out, err })); // 'close': after stdout is read to its end ('exit' may come first)
        }),
    ),
  );
}

const sqlFiles = (dir: string) => fs.readdirSync(dir).filter((f) => f.endsWith('.sql')).length;

/** Every process succeeded, each version was applied by exactly one of them, and the database records each once. */
async function expectAppliedOnce(runs: { code: number | null; out: string; err: string }[], migrations: number, at: StoredAt): Promise<void> {
  expect(runs.map((r) => [r.code, r.err])).toEqual(runs.map(() => [0, '']));
  const applied = runs.flatMap((r) => JSON.parse(r.out) as number[]).sort((a, b) => a - b);
  expect(applied).toEqual(Array.from({ length: migrations }, (_, i) => i + 1)); // each version applied by exactly one process
  expect(await storedValue(at, 'SELECT COUNT(*) FROM schema_migrations')).toBe(migrations);
}

// The SQLite file's migrations; with PostgreSQL, its own (the next test) are what a server applies.
(storeUnderTest === 'sqlite' ? test : test.skip)(
  'processes opening a fresh file at once apply every migration exactly once, none fails',
  async () => {
    const migrations = sqlFiles(migrationsDir);
    for (let round = 0; round < 3; round++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-migrate-'));
      const file = path.join(dir, 'fresh.db');
      // Each process loads everything, opens the file, then waits for the same instant and migrates:
      // the processes collide within a millisecond, and only the write lock decides who applies what.
      const startAt = Date.now() + 2000;
      const script =
        `const { migrate } = require(${JSON.stringify(path.join(projectRoot, 'dist', 'src', 'store', 'sqlite', 'database.js'))});` +
        `const { openSqlite } = require(${JSON.stringify(path.join(projectRoot, 'dist', 'src', 'sqlite-driver.js'))});` +
        `const db = openSqlite(process.argv[1]); while (Date.now() < ${startAt});` +
        'process.stdout.write(JSON.stringify(migrate(db)));';
      await expectAppliedOnce(await migrateTogether(script, file, 6), migrations, { databasePath: file, databaseUrl: null });
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
  60_000,
);

// PostgreSQL's counterpart of the test above (with SQLite, there is no PostgreSQL database to migrate).
(storeUnderTest === 'postgres' ? test : test.skip)(
  'processes migrating a fresh PostgreSQL database at once apply every migration exactly once, none fails',
  async () => {
    const migrations = sqlFiles(pgMigrationsDir);
    const dist = (file: string) => JSON.stringify(path.join(projectRoot, 'dist', 'src', 'store', 'postgres', file));
    for (let round = 0; round < 3; round++) {
      const database = await createPgDatabase();
      try {
        // Each process loads everything and connects, then waits for the same instant and migrates:
        // the processes collide within a millisecond, and only the advisory lock decides who applies what.
        const startAt = Date.now() + 2000;
        const script =
          `const { openPgDatabase } = require(${dist('database.js')}); const { migratePg } = require(${dist('migrate.js')});` +
          'const db = openPgDatabase(process.argv[1], { max: 1 });' +
          `db.pool.connect().then((c) => { c.release(); while (Date.now() < ${startAt}); return migratePg(db); })` +
          '.then((applied) => { process.stdout.write(JSON.stringify(applied)); return db.close(); })' +
          '.catch((err) => { process.stderr.write(String(err)); process.exitCode = 1; return db.close(); });';
        await expectAppliedOnce(await migrateTogether(script, database.url, 6), migrations, { databasePath: '', databaseUrl: database.url });
      } finally {
        await database.drop();
      }
    }
  },
  60_000,
);
