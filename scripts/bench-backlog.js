#!/usr/bin/env node
// How fast a backlog drains (issue 42): the same runs of a 1-step workflow, on a real
// `build-api serve` (SQLite, default workers), two ways:
//   live:    accepted over HTTP while the service runs (16 callers), timed from the first
//            acceptance to the last run's end;
//   backlog: written to the queue through the store port while the service is stopped (as a crash
//            leaves them), timed from the service's spawn (its start-up included) to the last run's end.
// Prints each rate (runs/s) and backlog/live; the issue asks for ≥ 0.8.
//
//   npm run build && node scripts/bench-backlog.js [--runs 1000]
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');

const root = path.resolve(__dirname, '..');
const dist = (module) => require(path.join(root, 'dist', 'src', module));
const { openSqlite } = dist('sqlite-driver');
const { openSqliteStore } = dist('store/sqlite');
const { openLocalIssuer } = dist('auth/local-issuer');
const { initialWorkflowState } = dist('runtime/workflow-executor');
const { uuidV7 } = dist('ids');
const { QUOTAS_ABOVE_ANY_LOAD } = require('./quotas');

const { values } = parseArgs({ options: { runs: { type: 'string', default: '1000' } } });
const RUNS = Number(values.runs);
const CALLERS = 16;
const BASE = 'http://bench.test';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-backlog-'));
const databasePath = path.join(dir, 'build.db');
const workflow = { kind: 'service.workflow/v1', slug: 'quick', name: 'Quick', steps: [{ id: 'echo', kind: 'tool', tool: 'core.echo', args: { text: 'hi' } }] };

async function serve() {
  const child = spawn(process.execPath, [path.join(root, 'bin', 'build-api.js'), 'serve'], {
    env: {
      ...process.env,
      ...QUOTAS_ABOVE_ANY_LOAD,
      PORT: '0',
      METRICS_PORT: '0',
      HOST: '127.0.0.1',
      DRAIN_SECONDS: '0',
      DATABASE_PATH: databasePath,
      PUBLIC_BASE_URL: BASE,
      DEFAULT_CREDITS: '1000000000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const port = await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      if (out === null) return; // the access lines: read and dropped
      out += chunk;
      const line = out.split('\n').find((l) => l.includes('"build-api listening"'));
      if (line) {
        out = null;
        resolve(JSON.parse(line).address.port);
      }
    });
    child.once('exit', (code) => reject(new Error(`the service exited with ${code}`)));
  });
  const stop = () =>
    new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGTERM');
    });
  return { url: `http://127.0.0.1:${port}`, stop };
}

async function main() {
  const token = () =>
    openLocalIssuer(dir, BASE).mint({ sub: 'bench', audience: 'build-api', claims: { workspace: 'bench', scope: 'build' }, ttlSeconds: 3600 });
  const db = () => openSqlite(databasePath, { readonly: true });
  const unfinished = (reader) => reader.prepare("SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running')").pluck().get();
  const untilDrained = async () => {
    const reader = db();
    while (unfinished(reader) > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    reader.close();
  };

  // Live: accepted while the service runs.
  let service = await serve();
  const headers = { authorization: `Bearer ${token()}`, 'content-type': 'application/json' };
  const created = await fetch(`${service.url}/api/build/workflows`, { method: 'PUT', headers, body: JSON.stringify(workflow) });
  if (created.status !== 201) throw new Error(`workflow: ${created.status} ${await created.text()}`);
  const stored = (await created.json()).data.document;
  let started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (next++ < RUNS) {
        const res = await fetch(`${service.url}/api/build/workflows/quick/test`, { method: 'POST', headers, body: '{}' });
        if (res.status !== 202) throw new Error(`test run: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      }
    }),
  );
  await untilDrained();
  const live = RUNS / ((performance.now() - started) / 1000);
  await service.stop();

  // Backlog: the same runs queued while the service is stopped.
  const reader = db();
  const targetId = reader.prepare("SELECT id FROM workflows WHERE slug = 'quick'").pluck().get();
  reader.close();
  const store = openSqliteStore(databasePath);
  for (let i = 0; i < RUNS; i++) {
    const outcome = await store.runs.accept(
      {
        id: uuidV7(),
        kind: 'workflow',
        workspaceId: 'bench',
        startedBy: 'bench',
        targetId,
        targetVersion: stored.version ?? 1,
        source: 'test',
        request: { input: {} },
        snapshotJson: JSON.stringify(stored),
        state: initialWorkflowState(stored),
        minimumCost: 1,
        initialCredits: 1e9,
      },
      () => 'refused',
    );
    if (outcome.status !== 'queued') throw new Error(`not queued: ${outcome.status}`);
  }
  await store.close();
  started = performance.now();
  service = await serve();
  const startUp = (performance.now() - started) / 1000;
  await untilDrained();
  const backlog = RUNS / ((performance.now() - started) / 1000);
  await service.stop();

  console.log(`${RUNS} runs of a 1-step workflow, SQLite, default workers`);
  console.log(`live (accepted while running, ${CALLERS} callers): ${live.toFixed(0)} runs/s`);
  console.log(`backlog (queued before a start, timed from the start, its ${startUp.toFixed(1)} s to listening included): ${backlog.toFixed(0)} runs/s`);
  console.log(`backlog / live: ${(backlog / live).toFixed(2)}`);
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => fs.rmSync(dir, { recursive: true, force: true }));
