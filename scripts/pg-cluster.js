#!/usr/bin/env node
// A throwaway PostgreSQL cluster for tests and benchmarks: initdb into a temporary directory as the
// `postgres` user, started on a free loopback port (no Unix socket outside that directory, trust
// authentication on loopback only), stopped and removed afterwards. The server binaries are
// Debian's PostgreSQL 15 (`initdb`, `pg_ctl`, `postgres` on PATH or under /usr/lib/postgresql/*/bin).
//
//   node scripts/pg-cluster.js start [--durable]   prints DATABASE_URL=… and PG_CLUSTER_DIR=…, leaves it running
//   node scripts/pg-cluster.js stop <dir>
//
// PG_CLUSTER_CPUS (a `taskset -c` list, say `1`) starts the server on those CPUs only: with the
// benchmark pinned elsewhere (`taskset -c 0 node scripts/bench.js …`), the database has cores of
// its own, as in a deployment, instead of sharing them with the service and the load generator.
//
// As a module: `const cluster = await startCluster(); … await cluster.stop();`
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { freePort } = require('./free-port');

/** The directory holding `initdb` and `pg_ctl`: PATH first, then Debian's versioned directories. */
function binDir() {
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (dir && fs.existsSync(path.join(dir, 'initdb')) && fs.existsSync(path.join(dir, 'pg_ctl'))) return dir;
  }
  const debian = '/usr/lib/postgresql';
  const versions = fs.existsSync(debian) ? fs.readdirSync(debian).sort((a, b) => Number(b) - Number(a)) : [];
  for (const version of versions) {
    const dir = path.join(debian, version, 'bin');
    if (fs.existsSync(path.join(dir, 'initdb'))) return dir;
  }
  throw new Error('PostgreSQL server binaries not found (apt-get install postgresql)');
}

/** Runs a PostgreSQL binary as the `postgres` user when this process is root (initdb refuses root). */
function asPostgres(bin, args, { cpus } = {}) {
  const file = path.join(binDir(), bin);
  const [cmd, argv] = process.getuid && process.getuid() === 0 ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
  const [pinnedCmd, pinnedArgv] = cpus ? ['taskset', ['-c', cpus, cmd, ...argv]] : [cmd, argv];
  return execFileSync(pinnedCmd, pinnedArgv, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
}

/**
 * Starts a cluster. `durable: false` (tests) turns off fsync and full-page writes, which only matter
 * when the machine itself crashes; benchmarks pass `durable: true` to measure what a deployment pays.
 */
async function startCluster({ durable = false } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-pg-'));
  fs.chmodSync(dir, 0o700);
  if (process.getuid && process.getuid() === 0) execFileSync('chown', ['postgres:postgres', dir]);
  const data = path.join(dir, 'data');
  const port = await freePort();
  asPostgres('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8']);
  const fast = durable ? '' : ' -c fsync=off -c full_page_writes=off -c synchronous_commit=off';
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200${fast}`;
  asPostgres('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'server.log'), '-w', '-t', '30', 'start'], { cpus: process.env.PG_CLUSTER_CPUS });
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dir,
    stop: async () => stopCluster(dir),
  };
}

function stopCluster(dir) {
  try {
    asPostgres('pg_ctl', ['-D', path.join(dir, 'data'), '-m', 'fast', '-w', 'stop']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

module.exports = { startCluster, stopCluster };

if (require.main === module) {
  const [command, dir] = process.argv.slice(2);
  if (command === 'start') {
    startCluster({ durable: process.argv.includes('--durable') }).then(
      (cluster) => console.log(`DATABASE_URL=${cluster.url}\nPG_CLUSTER_DIR=${cluster.dir}`),
      (err) => {
        console.error(err.stderr || err.message);
        process.exit(1);
      },
    );
  } else if (command === 'stop' && dir) stopCluster(dir);
  else {
    console.error('usage: pg-cluster.js start | stop <dir>');
    process.exit(2);
  }
}
