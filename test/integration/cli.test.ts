// The `build-api` command as an operator runs it (needs `npm run build`, which `npm test` does first).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_METRICS_PORT } from '../../src/config';
import { projectRoot } from '../../src/paths';
import { minimalAgent } from '../helpers/fixtures';
import { startService, type TestService } from '../helpers/service';
import { startServer } from '../reliability/server';

const bin = path.join(projectRoot, 'bin', 'build-api.js');
let t: TestService;
let env: Record<string, string>;

beforeAll(async () => {
  t = await startService();
  // The service's database, whichever store it runs on: its SQLite file, or its PostgreSQL database.
  env = {
    ...process.env,
    DATABASE_PATH: t.config.databasePath,
    ...(t.config.databaseUrl ? { DATABASE_URL: t.config.databaseUrl } : {}),
    PUBLIC_BASE_URL: 'http://build.test',
  } as Record<string, string>;
});
afterAll(() => t.close());

function cli(args: string[], extraEnv: Record<string, string> = {}, input?: string) {
  const res = spawnSync(process.execPath, [bin, ...args], { env: { ...env, ...extraEnv }, encoding: 'utf8', input });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

test('token prints a JWT the running service accepts, with the scope asked for', async () => {
  const { code, stdout } = cli(['token', '--user', 'cli-user', '--workspace', 'cli-ws']);
  expect(code).toBe(0);
  const token = stdout.trim();
  expect(token.split('.')).toHaveLength(3);
  expect((await t.client(token).GET('/api/build/agents')).response.status).toBe(200);

  const readOnly = cli(['token', '--user', 'cli-user', '--workspace', 'cli-ws', '--scope', 'read']).stdout.trim();
  expect((await t.client(readOnly).GET('/api/build/agents')).response.status).toBe(403);
});

test('token --team (repeatable) and --admin: the teams claim and the administrator grant; the service reads both', async () => {
  const teamed = cli(['token', '--user', 'fin', '--workspace', 'cli-ws', '--team', 'finance', '--team', 'ops', '--team', 'finance']);
  expect(teamed.code).toBe(0);
  const payload = JSON.parse(Buffer.from(teamed.stdout.trim().split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
  expect([payload.teams, payload.scope]).toEqual([['finance', 'ops'], 'build']);
  const admin = cli(['token', '--user', 'boss', '--workspace', 'cli-ws', '--admin']).stdout.trim();
  expect((JSON.parse(Buffer.from(admin.split('.')[1]!, 'base64url').toString('utf8')) as { scope: string }).scope).toBe('build build:admin');
  const created = await t
    .client(teamed.stdout.trim())
    .PUT('/api/build/agents', { body: { ...minimalAgent('Finance only'), slug: 'finance-only', space: { team: 'finance' } } });
  expect(created.response.status).toBe(201);
  expect((await t.client(admin).GET('/api/build/agents/{ref}', { params: { path: { ref: 'finance-only' } } })).response.status).toBe(200);
  const plain = cli(['token', '--user', 'plain', '--workspace', 'cli-ws']).stdout.trim();
  expect((await t.client(plain).GET('/api/build/agents/{ref}', { params: { path: { ref: 'finance-only' } } })).response.status).toBe(404);
  const bad = cli(['token', '--user', 'u', '--workspace', 'w', '--team', 'Finance Team']);
  expect([bad.code, bad.stderr.split('\n')[0]]).toEqual([
    2,
    "build-api: --team: 'Finance Team' is not a team slug (lowercase letters and digits joined by single hyphens)",
  ]);
});

test('connections add and list work on the service database, and the running service sees them at once', async () => {
  const token = cli(['token', '--user', 'u', '--workspace', 'cli-ws']).stdout.trim();
  const agent = { ...minimalAgent('Uses kv-cli'), tools: { apps: ['kv'], connections: ['kv-cli'], disabled_tools: [], approval: 'write' as const } };
  const before = await t.client(token).POST('/api/build/agents/validate', { body: agent });
  expect(before.response.status).toBe(400); // the service has now read this workspace's connections: none
  expect((before.error as { error: string }).error).toContain('kv-cli');
  const add = cli(['connections', 'add', '--workspace', 'cli-ws', '--app', 'kv', '--ref', 'kv-cli', '--label', 'From CLI']);
  expect(add.code).toBe(0);
  const list = cli(['connections', 'list', '--workspace', 'cli-ws']);
  expect(JSON.parse(list.stdout)).toEqual([{ ref: 'kv-cli', app: 'kv', label: 'From CLI', status: 'connected' }]);
  expect((await t.client(token).GET('/api/build/connections')).data!.data).toEqual([{ ref: 'kv-cli', app: 'kv', label: 'From CLI', status: 'connected' }]);
  expect((await t.client(token).POST('/api/build/agents/validate', { body: agent })).response.status).toBe(200);
});

test('connections add takes credentials on standard input (sealed, never shown), and a second add keeps them', async () => {
  const secret = 'cli-bearer-5e2b7a';
  const add = cli(
    ['connections', 'add', '--workspace', 'cli-ws', '--app', 'kv', '--ref', 'kv-secret', '--credentials-stdin'],
    {},
    JSON.stringify({ kind: 'bearer', token: secret }),
  );
  // stderr may hold the start-up warning of a store without SECRETS_KEY (PostgreSQL): never the secret.
  expect(add.code).toBe(0);
  expect(add.stderr).not.toContain(secret);
  expect(JSON.parse(add.stdout)).toMatchObject({ ref: 'kv-secret', app: 'kv', status: 'connected', credentials: { kind: 'bearer' } });
  expect(add.stdout).not.toContain(secret);
  const relabel = cli(['connections', 'add', '--workspace', 'cli-ws', '--app', 'kv', '--ref', 'kv-secret', '--label', 'Relabelled']);
  expect(JSON.parse(relabel.stdout)).toMatchObject({ label: 'Relabelled', credentials: { kind: 'bearer' } });
  const stored = await t.service.store.connections.get('cli-ws', 'kv-secret');
  expect(stored!.sealedCredentials).toMatch(/^enc:v1:/);
  expect(stored!.sealedCredentials).not.toContain(secret);
  const bad = cli(['connections', 'add', '--workspace', 'cli-ws', '--app', 'kv', '--ref', 'kv-bad', '--credentials-stdin'], {}, '{"kind":"bearer"}');
  expect([bad.code, bad.stderr.split('\n')[0]]).toEqual([2, 'build-api: --credentials-stdin: token: must be printable text of at most 4096 characters']);
  const noApp = cli(['connections', 'add', '--workspace', 'cli-ws', '--app', 'nope', '--ref', 'x']);
  const problem = noApp.stderr.split('\n').find((line) => line.startsWith('build-api:'));
  expect([noApp.code, problem]).toEqual([2, "build-api: body.app: no app 'nope' in this workspace (GET /api/build/apps lists them)"]);
});

test('credits set writes the balance', async () => {
  const res = cli(['credits', 'set', '--workspace', 'cli-ws', '--amount', '42']);
  expect(res.code).toBe(0);
  expect(JSON.parse(res.stdout)).toEqual({ workspace: 'cli-ws', credits: 42 });
  expect(await t.service.store.workspaces.credits('cli-ws', 1000)).toBe(42);
});

test('bad usage exits 2 with the problem and the usage', () => {
  const res = cli(['connections', 'add', '--workspace', 'w', '--app', 'kv', '--ref', 'r', '--status', 'broken']);
  expect(res.code).toBe(2);
  expect(res.stderr).toMatch(/^build-api: --status: must be one of connected, disconnected, expired\nusage:/);
  expect(cli(['token', '--workspace', 'w']).stderr).toMatch(/^build-api: --user: required/);
  expect(cli(['frobnicate']).code).toBe(2);
});

test('a bad configuration value stops the command with one line naming the variable', () => {
  const res = cli(['serve'], { PORT: 'eighty' });
  expect(res.code).toBe(1);
  expect(res.stderr).toBe("build-api: configuration error: PORT: must be a whole number, got 'eighty'\n");
});

describe('every start-up failure is one line naming its cause, and exit status 1', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-start-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  // A SQLite file of its own unless the case says otherwise; a port nobody uses.
  const serve = (extraEnv: Record<string, string>) =>
    cli(['serve'], { DATABASE_URL: '', DATABASE_PATH: path.join(dir, `${Math.random()}.db`), PORT: '0', ...extraEnv });
  const oneLine = (res: { code: number | null; stderr: string }, pattern: RegExp) => {
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^build-api: [^\n]+\n$/);
    expect(res.stderr).toMatch(pattern);
  };

  test('a taken port', () => {
    const taken = new URL(t.baseUrl).port;
    oneLine(serve({ PORT: taken }), new RegExp(`^build-api: cannot listen on 127\\.0\\.0\\.1:${taken}: the address is in use`));
  });
  test("an address that is not this machine's", () => {
    oneLine(serve({ HOST: '192.0.2.1' }), /cannot listen on 192\.0\.2\.1:\d+: the address is not one of this machine's \(set HOST\)/); // the metrics' port is opened first
  });
  test('a directory that cannot be made: a part of the path is a file', () => {
    fs.writeFileSync(path.join(dir, 'plain-file'), 'x');
    oneLine(serve({ DATABASE_PATH: path.join(dir, 'plain-file', 'sub', 'b.db') }), /DATABASE_PATH: cannot create the directory .*a part of the path is a file/);
  });
  test('a file that is not a database', () => {
    fs.writeFileSync(path.join(dir, 'garbage.db'), 'not a database, not at all: '.repeat(200));
    oneLine(serve({ DATABASE_PATH: path.join(dir, 'garbage.db') }), /cannot open the store \(SQLite file .*garbage\.db\): file is not a database/);
  });
  test('an unreachable PostgreSQL server', () => {
    oneLine(
      serve({ DATABASE_URL: 'postgres://user:secret@127.0.0.1:1/build' }),
      /^build-api: cannot open the store \(PostgreSQL at DATABASE_URL\): connect ECONNREFUSED/,
    );
  });
  test('a tracing protocol the service does not speak', () => {
    oneLine(
      serve({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      /^build-api: configuration error: OTEL_EXPORTER_OTLP_PROTOCOL: must be http\/protobuf or http\/json \(grpc is not supported\), got 'grpc'$/m,
    );
  });
  test('the same file served twice', () => {
    if (t.config.databaseUrl) return; // the service under test holds no SQLite file
    oneLine(serve({ DATABASE_PATH: t.config.databasePath }), /already/);
  });
});

test('the default metrics port held by another process: serve starts with metrics off and says why; METRICS_PORT set to it stops the start', async () => {
  // Holds the default port, unless another process of this machine already does: taken either way.
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.once('error', () => resolve()).listen(DEFAULT_METRICS_PORT, '127.0.0.1', resolve));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-metrics-'));
  const { METRICS_PORT: _unset, ...withoutMetricsPort } = env;
  const serveEnv = { ...withoutMetricsPort, DATABASE_URL: '', DATABASE_PATH: path.join(dir, 'b.db'), PORT: '0' };
  try {
    const refused = spawnSync(process.execPath, [bin, 'serve'], { env: { ...serveEnv, METRICS_PORT: String(DEFAULT_METRICS_PORT) }, encoding: 'utf8' });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(
      `build-api: cannot listen on 127.0.0.1:${DEFAULT_METRICS_PORT}: the address is in use (another process serves it; set METRICS_PORT or HOST)\n`,
    );

    // METRICS_PORT empty: unset, the default port.
    const server = await startServer({ METRICS_PORT: '' });
    try {
      const lines = server.logs.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.map((l) => l.msg)).toContain(
        `metrics off: cannot listen on 127.0.0.1:${DEFAULT_METRICS_PORT}: the address is in use (another process serves it; set METRICS_PORT or HOST)`,
      );
      expect(lines.find((l) => l.msg === 'build-api listening')?.metrics).toBe('off');
      expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
    } finally {
      await server.dispose();
    }
  } finally {
    holder.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('DATABASE_PATH: the parent directory is created', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-cli-'));
  try {
    // A SQLite file whichever store the service under test uses: no DATABASE_URL.
    const res = cli(['credits', 'set', '--workspace', 'w', '--amount', '1'], { DATABASE_PATH: path.join(dir, 'nested', 'deeper', 'b.db'), DATABASE_URL: '' });
    expect(res.code).toBe(0);
    expect(fs.existsSync(path.join(dir, 'nested', 'deeper', 'b.db'))).toBe(true);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
