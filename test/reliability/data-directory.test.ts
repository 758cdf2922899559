// The SQLite file's directory is created by whatever opens it first, `serve` or the CLI, with any
// missing parents (a fresh clone has no data/: issue 22). Where it cannot be created or opened,
// start-up stops with exit 1 and one line naming DATABASE_PATH and the reason: no stack trace.
// SQLite only: with DATABASE_URL the service keeps no files.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../src/paths';
import { storeUnderTest } from '../helpers/database';

const bin = path.join(projectRoot, 'bin', 'build-api.js');
const sqliteOnly = storeUnderTest === 'sqlite' ? describe : describe.skip;

let root: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'build-data-dir-'));
  fs.chmodSync(root, 0o755); // the unprivileged case below runs as another user
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** The environment a stranger has, plus DATABASE_PATH: no DATABASE_URL, no PORT from the caller. */
function env(databasePath: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATABASE_PATH: databasePath,
    PORT: '0',
    METRICS_PORT: '0',
    DRAIN_SECONDS: '0',
    LOG_LEVEL: 'info',
    ...extra,
  };
}

function cli(args: string[], databasePath: string, prefix: string[] = []) {
  const [command, ...rest] = [...prefix, process.execPath, bin, ...args];
  return spawnSync(command!, rest, { env: env(databasePath), encoding: 'utf8', timeout: 20_000 });
}

/** Starts `serve`, waits for it to listen, checks /healthz, stops it with SIGTERM; resolves with its exit code. */
async function serveOnce(databasePath: string): Promise<{ health: number; code: number | null }> {
  const child = spawn(process.execPath, [bin, 'serve'], { env: env(databasePath), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}${err}`)), 20_000);
    child.stdout.on('data', (c: Buffer) => {
      out += c;
      const listening = out.split('\n').find((line) => line.includes('"build-api listening"'));
      if (listening) {
        clearTimeout(timer);
        resolve((JSON.parse(listening) as { address: { port: number } }).address.port);
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}${err}`)));
  });
  const health = (await fetch(`http://127.0.0.1:${port}/healthz`)).status;
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  return { health, code: await exited };
}

sqliteOnly('the data directory', () => {
  test('serve creates missing parent directories before its lock and database, owner-only, and serves', async () => {
    const databasePath = path.join(root, 'fresh', 'nested', 'deeper', 'build.db');
    expect(await serveOnce(databasePath)).toEqual({ health: 200, code: 0 });
    const dir = path.dirname(databasePath);
    expect(fs.readdirSync(dir).sort()).toEqual(expect.arrayContaining(['build.db', 'build.db.serve-lock', 'issuer-key.pem']));
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(root, 'fresh')).mode & 0o777).toBe(0o700);
    // And the same directory serves again (it exists now; nothing is re-created or refused).
    expect(await serveOnce(databasePath)).toEqual({ health: 200, code: 0 });
  }, 60_000);

  test('the CLI creates them too, and serve then uses what the CLI made (its issuer key)', async () => {
    const databasePath = path.join(root, 'cli-first', 'a', 'build.db');
    const token = cli(['token', '--user', 'u', '--workspace', 'w'], databasePath);
    expect([token.status, token.stderr]).toEqual([0, '']);
    const key = fs.readFileSync(path.join(path.dirname(databasePath), 'issuer-key.pem'), 'utf8');
    expect(await serveOnce(databasePath)).toEqual({ health: 200, code: 0 });
    expect(fs.readFileSync(path.join(path.dirname(databasePath), 'issuer-key.pem'), 'utf8')).toBe(key);
  }, 60_000);

  test.each([
    [
      'a parent is a regular file',
      () => {
        fs.writeFileSync(path.join(root, 'plain-file'), 'x');
        return path.join(root, 'plain-file', 'sub', 'build.db');
      },
      (p: string) => `build-api: DATABASE_PATH: cannot create the directory ${path.dirname(p)}: a part of the path is a file, not a directory\n`,
    ],
    [
      'the path is a directory',
      () => fs.mkdtempSync(path.join(root, 'is-a-dir-')),
      (p: string) => `build-api: DATABASE_PATH: cannot open ${p}: it is a directory\n`,
    ],
  ])('%s: serve and the CLI stop with exit 1 and one line naming DATABASE_PATH and the reason', (_name, make, message) => {
    const databasePath = make();
    for (const args of [['serve'], ['token', '--user', 'u', '--workspace', 'w']]) {
      const res = cli(args, databasePath);
      expect([args[0], res.status, res.stdout, res.stderr]).toEqual([args[0], 1, '', message(databasePath)]);
    }
  });

  // Permissions bind only an unprivileged user: as root, the test runs the command as `nobody`.
  const asUnprivileged: string[] | null = (() => {
    if (process.getuid?.() !== 0) return [];
    const probe = spawnSync('runuser', ['-u', 'nobody', '--', 'test', '-r', bin]);
    return probe.status === 0 ? ['runuser', '-u', 'nobody', '--'] : null;
  })();
  (asUnprivileged ? test : test.skip)('a directory the user may not write: one line saying so, for the directory and for the file', () => {
    const locked = path.join(root, 'read-only');
    fs.mkdirSync(path.join(locked, 'existing'), { recursive: true });
    fs.chmodSync(path.join(locked, 'existing'), 0o555);
    fs.chmodSync(locked, 0o555);
    try {
      const missing = path.join(locked, 'missing', 'build.db');
      const res = cli(['serve'], missing, asUnprivileged!);
      expect([res.status, res.stderr]).toEqual([1, `build-api: DATABASE_PATH: cannot create the directory ${path.dirname(missing)}: permission denied\n`]);
      const inExisting = path.join(locked, 'existing', 'build.db');
      const res2 = cli(['serve'], inExisting, asUnprivileged!);
      expect([res2.status, res2.stderr]).toEqual([
        1,
        `build-api: DATABASE_PATH: cannot open ${inExisting}.serve-lock: unable to open database file (is ${path.dirname(inExisting)} writable?)\n`,
      ]);
    } finally {
      fs.chmodSync(locked, 0o755);
    }
  });
});
