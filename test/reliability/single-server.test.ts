// One server per database file, enforced: a second `build-api serve` on a file another one serves
// is refused at start with one line naming the file, while the CLI's short writes stay allowed; a
// killed server leaves no stale lock. And migrations are applied under the write lock, so processes
// starting together on a fresh file apply each exactly once.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { projectRoot } from '../../src/paths';
import { startServer, type ServerProcess } from './server';

const bin = path.join(projectRoot, 'bin', 'build-api.js');
const cli = (args: string[], env: Record<string, string>) =>
  spawnSync(process.execPath, [bin, ...args], { env: { ...process.env, LOG_LEVEL: 'silent', ...env }, encoding: 'utf8', timeout: 20_000 });

let s: ServerProcess;
beforeAll(async () => {
  s = await startServer();
});
afterAll(() => s.dispose());

test('a second serve on the same file is refused with one line naming it; the first keeps serving; the CLI still writes', async () => {
  const second = cli(['serve'], { PORT: '0', DATABASE_PATH: s.databasePath });
  expect(second.status).toBe(1);
  expect(second.stderr).toBe(`build-api: ${s.databasePath} is already served by another build-api serve; stop it first, or set DATABASE_PATH to another file\n`);
  expect(second.stdout).toBe('');

  expect((await fetch(`${s.baseUrl}/healthz`)).status).toBe(200);
  const created = await s.client().PUT('/api/build/workflows', { body: { kind: 'service.workflow/v1', slug: 'still-here', name: 'S', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] } });
  expect(created.response.status).toBe(201);

  const credits = cli(['credits', 'set', '--workspace', 'ws-cli', '--amount', '7'], { DATABASE_PATH: s.databasePath });
  expect([credits.status, credits.stdout]).toEqual([0, '{"workspace":"ws-cli","credits":7}\n']);
}, 30_000);

test('a killed server leaves no lock behind: the next serve on the file starts', async () => {
  await s.kill('SIGKILL');
  await s.restart();
  expect((await fetch(`${s.baseUrl}/healthz`)).status).toBe(200);
  expect((await s.client().GET('/api/build/workflows/{ref}', { params: { path: { ref: 'still-here' } } })).response.status).toBe(200);
}, 30_000);

test('processes opening a fresh file at once apply every migration exactly once, none fails', async () => {
  const migrations = fs.readdirSync(path.join(projectRoot, 'src', 'store', 'migrations')).filter((f) => f.endsWith('.sql')).length;
  for (let round = 0; round < 3; round++) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-migrate-'));
    const file = path.join(dir, 'fresh.db');
    // Each process loads everything, opens the file, then waits for the same instant and migrates:
    // the processes collide within a millisecond, and only the write lock decides who applies what.
    const startAt = Date.now() + 2000;
    const script = `const { migrate } = require(${JSON.stringify(path.join(projectRoot, 'dist', 'src', 'store', 'db.js'))});` +
      `const db = require('better-sqlite3')(process.argv[1]); while (Date.now() < ${startAt});` +
      'process.stdout.write(JSON.stringify(migrate(db)));';
    const runs = await Promise.all(
      Array.from({ length: 6 }, () =>
        new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
          const child = spawn(process.execPath, ['-e', script, file], { cwd: projectRoot });
          let out = '';
          let err = '';
          child.stdout.on('data', (c: Buffer) => (out += c));
          child.stderr.on('data', (c: Buffer) => (err += c));
          child.on('close', (code) => resolve({ code, out, err })); // 'close': after stdout is read to its end ('exit' may come first)
        }),
      ),
    );
    expect(runs.map((r) => [r.code, r.err])).toEqual(runs.map(() => [0, '']));
    const applied = runs.flatMap((r) => JSON.parse(r.out) as number[]).sort((a, b) => a - b);
    expect(applied).toEqual(Array.from({ length: migrations }, (_, i) => i + 1)); // each version applied by exactly one process
    const db = new Database(file, { readonly: true });
    expect(db.prepare('SELECT COUNT(*) FROM schema_migrations').pluck().get()).toBe(migrations);
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
