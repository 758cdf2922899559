#!/usr/bin/env node
// What one kv.set costs in a workspace that holds many keys, on both stores, through the store port
// (no HTTP): 10,000 keys written, then 2,000 sets of one existing key, timed. A tenant may hold
// KV_MAX_KEYS keys; an update must not cost in proportion to them (docs/benchmarks.md, issue 25).
//
//   npm run build && node scripts/bench-kv-set.js [<built checkout>, default this one]
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startCluster } = require('./pg-cluster');

const KEYS = 10_000;
const SETS = 2_000;

async function timeSets(store) {
  await Promise.all(
    Array.from({ length: 10 }, async (_, w) => {
      for (let i = 0; i < KEYS / 10; i++) await store.kv.set('ws', `k${w}-${i}`, i, KEYS);
    }),
  );
  const started = process.hrtime.bigint();
  for (let i = 0; i < SETS; i++) await store.kv.set('ws', 'k0-1', i, KEYS);
  return Number(process.hrtime.bigint() - started) / SETS / 1000;
}

(async () => {
  const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..'));
  const { openPostgresStore } = require(path.join(root, 'dist/src/store/postgres'));
  const { openSqliteStore } = require(path.join(root, 'dist/src/store/sqlite'));
  const cluster = await startCluster({ durable: true });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-kv-'));
  try {
    for (const [name, open] of [
      ['SQLite', () => openSqliteStore(path.join(dir, 'build.db'))],
      ['PostgreSQL', () => openPostgresStore(cluster.url)],
    ]) {
      const store = await open();
      try {
        console.log(`${name}: ${(await timeSets(store)).toFixed(1)} µs per set of an existing key among ${KEYS.toLocaleString('en-US')}`);
      } finally {
        await store.close();
      }
    }
  } finally {
    await cluster.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
})().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
