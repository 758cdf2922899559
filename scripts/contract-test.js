#!/usr/bin/env node
// The contract test: starts the real server (`build-api serve`) on a temporary database and a free
// loopback port, replays openapi.yaml against it with Dredd (hooks in test/contract/hooks.js mint
// tokens, carry ETags, provoke the documented 4xx statuses and validate every reply against the
// spec), then stops the server with SIGTERM and checks that it shut down cleanly.
//
//   node scripts/contract-test.js [--store sqlite|postgres]
// With --store postgres the server runs on a throwaway PostgreSQL cluster (scripts/pg-cluster.js),
// and the hooks sign with the issuer key the server keeps in that database.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const { freePort } = require('./free-port');
const { startCluster } = require('./pg-cluster');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

async function waitReady(url, server, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`server exited with ${server.exitCode} before it was ready`);
    try {
      const res = await fetch(`${url}/readyz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server not ready at ${url} within ${timeoutMs} ms`);
}

/** Runs Dredd, echoing its output, and closes with one line: `contract: N passed, N failed, N skipped`. */
function runDredd(args, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [require.resolve('dredd/bin/dredd'), ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
      process.stdout.write(chunk);
    });
    child.on('exit', (code) => {
      const m = /complete\S*: (\d+) passing, (\d+) failing, (\d+) errors, (\d+) skipped/.exec(output);
      if (m) process.stdout.write(`contract: ${m[1]} passed, ${Number(m[2]) + Number(m[3])} failed, ${m[4]} skipped\n`);
      resolve(code ?? 1);
    });
  });
}

/** With --store postgres: a throwaway cluster, and the DATABASE_URL the server is given. */
async function storeUnderTest() {
  const at = process.argv.indexOf('--store');
  const store = at < 0 ? 'sqlite' : process.argv[at + 1];
  if (store === 'sqlite') return { env: {}, stop: async () => undefined };
  if (store !== 'postgres') throw new Error(`--store: ${store} (sqlite or postgres)`);
  const cluster = await startCluster();
  return { env: { DATABASE_URL: cluster.url }, stop: () => cluster.stop() };
}

/** The key the server's built-in issuer signs with, as the hooks need it: from the database when it keeps it there. */
async function signingKeyEnv(env) {
  if (!env.DATABASE_URL) return {};
  const { openPostgresStore } = require(path.join(root, 'dist', 'src', 'store', 'postgres'));
  const store = await openPostgresStore(env.DATABASE_URL, { poolSize: 1 });
  try {
    return {
      CONTRACT_SIGNING_KEY: await store.signingKey(() => {
        throw new Error('the server stored no signing key');
      }),
    };
  } finally {
    await store.close();
  }
}

async function main() {
  const store = await storeUnderTest();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-api-contract-'));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_PATH: path.join(dataDir, 'build.db'),
    PUBLIC_BASE_URL: baseUrl,
    LOG_LEVEL: process.env.CONTRACT_LOG_LEVEL || 'warn',
    // A cancel answers 202 when the run's call in flight outlasts this (the 202 transaction's run sleeps 2 s).
    RUN_CANCEL_WAIT_MS: '200',
    // The 429 of the event streams: the hooks hold this many open first.
    EVENT_STREAMS_PER_CALLER: '2',
    // The hooks spend one caller's quota for the operations' 429s (test/contract/hooks.js): an hour's
    // window, so it is spent once, and a quota the transactions' own caller stays far below.
    RATE_LIMIT_WINDOW_SECONDS: '3600',
    RATE_LIMIT_CALLER: '5000',
    // The example app's MCP server is the hooks' own, on loopback.
    HTTP_TOOL_ALLOW_PRIVATE: 'true',
    METRICS_PORT: '0',
    DRAIN_SECONDS: '0',
    ...store.env,
  };
  delete env.AUTH_ISSUER;
  delete env.AUTH_JWKS_URI;
  const server = spawn(process.execPath, [path.join(root, 'bin', 'build-api.js'), 'serve'], { cwd: root, env, stdio: ['ignore', 'inherit', 'inherit'] });
  let code = 1;
  try {
    await waitReady(baseUrl, server);
    code = await runDredd(['openapi.yaml', baseUrl, '--hookfiles=test/contract/hooks.js', '--loglevel=error', '--color=false'], {
      ...env,
      CONTRACT_BASE_URL: baseUrl,
      CONTRACT_DATA_DIR: dataDir,
      ...(await signingKeyEnv(env)),
    });
  } finally {
    const exited = new Promise((resolve) => server.once('exit', (c, signal) => resolve({ c, signal })));
    server.kill('SIGTERM');
    const { c, signal } = await Promise.race([exited, new Promise((r) => setTimeout(() => r({ c: null, signal: 'timeout' }), 15000))]);
    if (c !== 0) {
      console.error(`server did not shut down cleanly on SIGTERM (exit ${c}, signal ${signal})`);
      server.kill('SIGKILL');
      code = code || 1;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
    await store.stop();
  }
  process.exit(code);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
