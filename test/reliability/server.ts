// A real server process (`build-api serve`, built into dist/ by `npm run build`) on a loopback
// port, for the reliability tests: they kill it, restart it on the same database, and read its logs.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import createClient from 'openapi-fetch';
import type { paths } from '../../generated/api';
import { localIssuerFromKey, openLocalIssuer } from '../../src/auth/local-issuer';
import { SIGNING_KEY_FILE } from '../../src/data-directory/key-file';
import { freshDatabase } from '../helpers/database';
import { storedSigningKey } from '../helpers/stored';
import { storedRows } from '../helpers/stored';
import { projectRoot } from '../../src/paths';

export const PUBLIC_BASE_URL = 'http://reliability.test';

export interface ServerProcess {
  baseUrl: string;
  dataDir: string;
  databasePath: string;
  /** The PostgreSQL database it serves, or null when it serves the SQLite file at databasePath. */
  databaseUrl: string | null;
  /** Every line the process wrote to stdout and stderr, across restarts. */
  logs: string[];
  pid(): number;
  token(opts?: { user?: string; workspace?: string; scope?: string; ttl?: number }): string;
  client(token?: string | null): ReturnType<typeof createClient<paths>>;
  /** Kills the process (SIGKILL by default) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  /** Starts it again on the same database. */
  restart(): Promise<void>;
  /** Stops it and removes its data directory. */
  dispose(): Promise<void>;
  /**
   * With `watch`: the longest event-loop delay and the peak resident memory since the last call
   * (loop-watch.js in the server process). `collected`: after a full garbage collection, so that
   * `rss` is what the process keeps.
   */
  loopStats(opts?: { collected?: boolean }): Promise<LoopStats>;
}

export interface LoopStats {
  maxDelayMs: number;
  p99DelayMs: number;
  rss: number;
  peakRss: number;
}

/**
 * What a failed test left running: its servers (a child with an IPC channel keeps the test worker,
 * and so jest, from exiting) and its health watchers. Stopped after each file, whatever happened.
 */
const leftRunning = new Set<() => Promise<unknown>>();
afterAll(async () => {
  await Promise.all([...leftRunning].map((stop) => stop()));
  leftRunning.clear();
});

/**
 * `env.DATABASE_URL` or `env.DATABASE_PATH`: that database (several servers may share a PostgreSQL
 * one); otherwise a fresh database of the store under test (test/helpers/database.ts).
 */
/**
 * `watch`: load loop-watch.js (loopStats). `keepRequestLines: false`: leave the access-log lines out
 * of `logs`, for a test that sends hundreds of thousands of requests.
 */
export async function startServer(env: Record<string, string> = {}, opts: { watch?: boolean; keepRequestLines?: boolean } = {}): Promise<ServerProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-reliability-'));
  const databasePath = path.join(dataDir, 'build.db');
  const database = env.DATABASE_URL || env.DATABASE_PATH ? null : await freshDatabase();
  const databaseUrl = env.DATABASE_URL ?? database?.url ?? null;
  const logs: string[] = [];
  let child: ChildProcess;
  let baseUrl = '';

  async function launch(): Promise<void> {
    const watcher = opts.watch ? ['--require', path.join(__dirname, 'loop-watch.js')] : [];
    child = spawn(process.execPath, [...watcher, path.join(projectRoot, 'bin', 'build-api.js'), 'serve'], {
      env: {
        ...process.env,
        PORT: '0',
        METRICS_PORT: '0',
        DRAIN_SECONDS: '0',
        HOST: '127.0.0.1',
        DATABASE_PATH: databasePath,
        PUBLIC_BASE_URL,
        LOG_LEVEL: 'info',
        ...database?.env,
        ...env,
      },
      stdio: opts.watch ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
    });
    baseUrl = await new Promise<string>((resolve, reject) => {
      let buffered = '';
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${logs.slice(-10).join('\n')}`)), 20_000);
      const onLine = (line: string) => {
        if (opts.keepRequestLines !== false || !line.includes('"msg":"request"')) logs.push(line);
        if (!line.includes('"build-api listening"')) return;
        const { address } = JSON.parse(line) as { address: { port: number } };
        clearTimeout(timer);
        resolve(`http://127.0.0.1:${address.port}`);
      };
      child.stdout!.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        lines.forEach(onLine);
      });
      child.stderr!.on('data', (chunk: Buffer) => logs.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`server exited with ${code}:\n${logs.slice(-10).join('\n')}`));
      });
    });
  }

  await launch();
  // The key the server signs with: its data directory's file (SQLite), or the database's (read once: it never changes;
  // none is stored when the server is not its own issuer: AUTH_ISSUER).
  const key = databaseUrl && !env.AUTH_ISSUER ? await storedSigningKey(databaseUrl) : null;
  const issuer = () => {
    if (key) return localIssuerFromKey(key, PUBLIC_BASE_URL);
    if (databaseUrl) throw new Error('this server is not its own issuer (AUTH_ISSUER): it stored no key to mint tokens with');
    return openLocalIssuer(dataDir, PUBLIC_BASE_URL);
  };
  const server: ServerProcess = {
    get baseUrl() {
      return baseUrl;
    },
    dataDir,
    databasePath,
    databaseUrl,
    logs,
    pid: () => child.pid as number,
    token: (opts = {}) =>
      issuer().mint({
        sub: opts.user ?? 'user-1',
        audience: 'build-api',
        claims: { workspace: opts.workspace ?? 'ws-1', scope: opts.scope ?? 'build' },
        ttlSeconds: opts.ttl ?? 3600,
      }),
    client: (t = server.token()) => createClient<paths>({ baseUrl, headers: t ? { Authorization: `Bearer ${t}` } : {} }),
    kill: (signal = 'SIGKILL') =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.removeAllListeners('exit');
        child.once('exit', (code) => resolve(code));
        child.kill(signal);
      }),
    restart: launch,
    loopStats: ({ collected = false } = {}) =>
      new Promise<LoopStats>((resolve, reject) => {
        if (!opts.watch) return reject(new Error('startServer(env, { watch: true }) watches the loop'));
        child.once('message', (stats) => resolve(stats as LoopStats));
        child.send(collected ? 'loop-stats-collected' : 'loop-stats');
      }),
    dispose: async () => {
      leftRunning.delete(server.dispose);
      await server.kill('SIGTERM');
      await database?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  leftRunning.add(server.dispose);
  return server;
}

/** The built-in issuer's private key (PEM) as the server's store keeps it: the file in its data directory (SQLite), or the database's row (PostgreSQL). */
export async function signingKeyOf(s: ServerProcess): Promise<string> {
  return s.databaseUrl ? storedSigningKey(s.databaseUrl) : fs.readFileSync(path.join(s.dataDir, SIGNING_KEY_FILE), 'utf8');
}

/** Each table's order in storedTables: SQLite's rowid (insertion order); PostgreSQL has none, so the primary key. */
const ORDER_KEYS = {
  agents: 'id',
  workflows: 'id',
  skills: 'id',
  runs: 'id',
  agent_triggers: 'id',
  kv_entries: 'workspace_id, key',
  workspaces: 'id',
  workspace_apps: 'workspace_id, slug',
  connections: 'workspace_id, ref',
  eval_datasets: 'id',
  evals: 'id',
  event_endpoints: 'id',
} as const;

/** Every row of these tables, as one string: two equal snapshots mean nothing was written to them in between. */
export async function storedTables(s: ServerProcess, tables: (keyof typeof ORDER_KEYS)[]): Promise<string> {
  const all = [];
  // By each table's key on both stores (a WITHOUT ROWID table has no rowid to order by).
  for (const table of tables) all.push(await storedRows(s, `SELECT * FROM ${table} ORDER BY ${ORDER_KEYS[table]}`));
  return JSON.stringify(all);
}

/**
 * Polls `server`'s /healthz every 50 ms (and, with `other`, that token's list of agents: another
 * workspace being served) until the returned function is called: the slowest answer, the failures
 * and how many polls were made.
 */
export function watchHealth(server: ServerProcess, other?: string) {
  let stop = false;
  let slowest = 0;
  let failures = 0;
  let probes = 0;
  const done = (async () => {
    while (!stop) {
      const started = performance.now();
      const health = await fetch(`${server.baseUrl}/healthz`).catch(() => null);
      if (health?.status !== 200) failures++;
      await health?.arrayBuffer();
      if (other) {
        const listed = await fetch(`${server.baseUrl}/api/build/agents`, { headers: { authorization: `Bearer ${other}` } }).catch(() => null);
        if (listed?.status !== 200) failures++;
        await listed?.arrayBuffer();
      }
      slowest = Math.max(slowest, performance.now() - started);
      probes++;
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const finish = async () => {
    leftRunning.delete(finish);
    stop = true;
    await done;
    return { slowest, failures, probes };
  };
  leftRunning.add(finish);
  return finish;
}
