#!/usr/bin/env node
// What one event claim costs as one endpoint's backlog grows (issue 49, docs/events.md "Fair"): a
// SQLite store with one endpoint holding N due deliveries and 64 others with one each; each claim
// (as the sender makes it: up to 32, 4 per endpoint) is timed, then its deliveries are recorded so
// the next claim finds the same backlog. A claim runs on the event loop: its time is what every
// tenant waits.
//
//   npm run build && node scripts/bench-event-claims.js [--backlogs 0,10000,50000] [--claims 20]
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const dist = path.join(__dirname, '..', 'dist', 'src');
const { openSqliteStore } = require(path.join(dist, 'store', 'sqlite', 'index.js'));
const argOf = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const BACKLOGS = argOf('--backlogs', '0,10000,50000').split(',').map(Number);
const CLAIMS = Number(argOf('--claims', 20));
const OTHERS = 64;

async function endpoint(store, ws) {
  const created = await store.eventEndpoints.create(
    ws,
    {
      id: crypto.randomUUID(),
      url: 'https://receiver.example/events',
      eventTypes: ['*'],
      description: null,
      status: 'enabled',
      allSpaces: true,
      teams: [],
      sealedSecret: 'sealed',
      secretPrefix: 'whsec_x',
    },
    10,
  );
  return { ws, id: created.record.id };
}

/** `n` test events queued to `e`, a thousand writes at a time (the group commit takes them together). */
async function queued(store, e, n) {
  for (let done = 0; done < n; done += 1000) {
    await Promise.all(Array.from({ length: Math.min(1000, n - done) }, () => store.eventEndpoints.queueTest(e.ws, e.id, Date.now())));
  }
}

async function measure(backlog) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-claims-'));
  const store = openSqliteStore(path.join(dir, 'build.db'));
  try {
    const flooded = await endpoint(store, 'ws-flooded');
    await queued(store, flooded, backlog);
    const others = [];
    for (let i = 0; i < OTHERS; i++) others.push(await endpoint(store, `ws-${i}`));
    const times = [];
    for (let c = 0; c < CLAIMS; c++) {
      for (const e of others) await store.eventEndpoints.queueTest(e.ws, e.id, Date.now());
      const now = Date.now() + 1;
      const started = performance.now();
      const claimed = await store.eventEndpoints.claimDue(now, now + 60_000, 32, 4);
      times.push(performance.now() - started);
      const ok = { kind: 'succeeded', attempt: { at: new Date(now).toISOString(), status_code: 204, latency_ms: 1, error: null, response_prefix: null } };
      await Promise.all(claimed.map((d) => store.eventEndpoints.finishAttempt(d, ok, now, 3_600_000)));
    }
    times.sort((a, b) => a - b);
    const at = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(2);
    console.log(`| ${backlog} | ${at(0.5)} | ${at(0.95)} | ${times[times.length - 1].toFixed(2)} |`);
  } finally {
    store.close?.();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

(async () => {
  console.log(`one endpoint's backlog and ${OTHERS} endpoints with one due each; ${CLAIMS} claims of up to 32 (4 per endpoint), SQLite`);
  console.log('| backlog (due deliveries of one endpoint) | claim ms p50 | p95 | max |');
  console.log('| --- | --- | --- | --- |');
  for (const backlog of BACKLOGS) await measure(backlog);
})().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
