#!/usr/bin/env node
// The event sender's store work per delivery, through the SQLite adapter of a build: 20 test
// deliveries queued at a time over 8 endpoints, then claimed (as the sender claims: up to 32, 4 per
// endpoint) and recorded as delivered; the process's CPU per delivery of each step, the first 100
// rounds left out, then the WAL pages each step's commits wrote per delivery (the CPU moves with
// the machine, the pages do not). No HTTP, no timers: what the outbox's statements and commits
// cost, apart from the runs and the POSTs. `--root` takes another build (a worktree of
// bench:compare) for an A/B. Columns: build, CPU µs of queue, claim, record, pages of the same.
//
//   npm run build && node scripts/bench-event-store.js [--rounds 600] [--root /tmp/build-api-bench-<commit>]
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const argOf = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const ROOT = path.resolve(argOf('--root', path.join(__dirname, '..')));
const ROUNDS = Number(argOf('--rounds', 600));
const WARM = 100;
const { openSqliteStore } = require(path.join(ROOT, 'dist', 'src', 'store', 'sqlite', 'index.js'));

/**
 * The WAL's last frame (the wal-index header's mxFrame, in the -shm file): frames a step added are
 * the difference, unless a checkpoint let the WAL start over in between (then the step is not counted).
 */
const walFrames = (file) => {
  try {
    return fs.readFileSync(`${file}-shm`).readUInt32LE(16);
  } catch {
    return null;
  }
};

const cpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-event-store-'));
  const file = path.join(dir, 'build.db');
  const store = openSqliteStore(file);
  const outbox = store.eventEndpoints;
  try {
    const endpoints = [];
    for (let i = 0; i < 8; i++) {
      const ws = `ws-${i}`;
      const endpoint = { id: crypto.randomUUID(), url: 'https://receiver.example/events', eventTypes: ['*'], description: null, status: 'enabled' };
      const created = await outbox.create(ws, { ...endpoint, allSpaces: true, teams: [], sealedSecret: 'sealed', secretPrefix: 'whsec_x' }, 10);
      endpoints.push({ ws, id: created.record.id });
    }
    const ok = { kind: 'succeeded', attempt: { at: new Date().toISOString(), status_code: 204, latency_ms: 1, error: null, response_prefix: null } };
    // Builds before f8966dd recorded by (delivery id, attempt); later ones by the claim.
    const record = (d, now) =>
      outbox.finishAttempt.length === 5 ? outbox.finishAttempt(d.id, d.attempt, ok, now, 3_600_000) : outbox.finishAttempt(d, ok, now, 3_600_000);
    const cpu = { queue: 0, claim: 0, record: 0 };
    const pages = { queue: [0, 0], claim: [0, 0], record: [0, 0] }; // [frames, deliveries] of the steps counted
    const countPages = (step, from, n) => {
      const to = walFrames(file);
      if (from !== null && to !== null && to >= from) {
        pages[step][0] += to - from;
        pages[step][1] += n;
      }
    };
    let deliveries = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const measured = round >= WARM;
      let frames = walFrames(file);
      let t = cpuMicros();
      await Promise.all(Array.from({ length: 20 }, (_, k) => outbox.queueTest(endpoints[k % 8].ws, endpoints[k % 8].id, Date.now())));
      if (measured) cpu.queue += cpuMicros() - t;
      if (measured) countPages('queue', frames, 20);
      frames = walFrames(file);
      const now = Date.now() + 1;
      t = cpuMicros();
      const claimed = [];
      for (;;) {
        const batch = await outbox.claimDue(now, now + 60_000, 32, 4);
        claimed.push(...batch);
        if (batch.length < 32) break;
      }
      if (measured) cpu.claim += cpuMicros() - t;
      if (measured) countPages('claim', frames, claimed.length);
      frames = walFrames(file);
      t = cpuMicros();
      await Promise.all(claimed.map((d) => record(d, now)));
      if (measured) {
        cpu.record += cpuMicros() - t;
        countPages('record', frames, claimed.length);
        deliveries += claimed.length;
      }
    }
    const per = (micros) => (micros / deliveries).toFixed(1);
    const perPages = ([frames, n]) => (n ? (frames / n).toFixed(2) : '-');
    console.log(
      `| ${path.basename(ROOT)} | ${per(cpu.queue)} | ${per(cpu.claim)} | ${per(cpu.record)} | ${perPages(pages.queue)} | ${perPages(pages.claim)} | ${perPages(pages.record)} |`,
    );
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
})().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
