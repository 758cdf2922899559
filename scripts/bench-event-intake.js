#!/usr/bin/env node
// What writing a run's event with its end costs SQLite, part by part (issue 49, docs/benchmarks.md):
// 8 workspaces with an endpoint each subscribed to `run.finished`, runs ended --per-commit to a
// transaction (a group commit; in the service most hold one run's end), the CPU per run end with the
// intake trigger's body cut down to each part:
//   none      no subscription: the cause trigger's probe only
//   trigger   the cause trigger numbers the event on the run's row, the intake does nothing
//   fan-out   the subscribed endpoints read only
//   delivery  a delivery row per endpoint (no body or id made)
//   full      the trigger as the migrations write it
// (The variants `sequence`, the number's own table, and `inbox`, an unindexed table fanned out
// apart, are gone with what they measured: docs/benchmarks.md has their figures.)
//
//   npm run build && node scripts/bench-event-intake.js [--runs 20000] [--per-commit 4] [--only none,full]
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const Database = require('better-sqlite3');

const argOf = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const RUNS = Number(argOf('--runs', 20000));
const WARM = 2000;
const PER_COMMIT = Number(argOf('--per-commit', 4));
/** Runs ended after the timed ones, without checkpoints, to count the WAL's pages. */
const PAGE_RUNS = 1000;
// The store's own migration runner, from the build: the schema the service makes.
const { migrate } = require(path.join(__dirname, '..', 'dist', 'src', 'store', 'sqlite', 'database.js'));

const PARTS = {
  trigger: 'SELECT 1;',
  'fan-out': `SELECT e.id FROM event_endpoints AS e WHERE e.workspace_id = NEW.workspace_id AND e.status = 'enabled'
      AND EXISTS (SELECT 1 FROM event_subscriptions AS s WHERE s.workspace_id = NEW.workspace_id AND s.event_type IN (NEW.type, '*') AND s.endpoint_id = e.id);`,
  delivery: `INSERT INTO event_deliveries (id, endpoint_id, workspace_id, event_id, event_type, body, status, next_attempt_ms, created_ms)
      SELECT lower(hex(randomblob(16))), e.id, NEW.workspace_id, 'evt', NEW.type, NEW.data, 'pending', 1, 1 FROM event_endpoints AS e WHERE e.workspace_id = NEW.workspace_id;`,
};

function measure(variant) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-bench-event-intake-'));
  const db = new Database(path.join(dir, 'build.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  migrate(db);
  for (let i = 0; i < 8; i++) {
    const id = crypto.randomUUID();
    db.prepare(
      `INSERT INTO event_endpoints (id, workspace_id, url, event_types, description, status, all_spaces, teams, secret_sealed, secret_prefix, created_at, stamp_us)
       VALUES (?, ?, 'https://receiver.example/events', '["run.finished"]', NULL, 'enabled', 1, '[]', 'sealed', 'whsec_x', 'now', 1)`,
    ).run(id, `ws-${i}`);
    if (variant !== 'none')
      db.prepare(`INSERT INTO event_subscriptions (workspace_id, event_type, endpoint_id) VALUES (?, 'run.finished', ?)`).run(`ws-${i}`, id);
  }
  if (PARTS[variant]) {
    db.exec(`DROP TRIGGER event_intake_insert; CREATE TRIGGER event_intake_insert INSTEAD OF INSERT ON event_intake BEGIN ${PARTS[variant]} END;`);
  }
  const accept = db.prepare(
    `INSERT INTO runs (id, kind, workspace_id, started_by, target_id, target_version, status, source, accepted_at, request, state, snapshot)
     VALUES (?, 'workflow', ?, 'bench', 'workflow-1', 1, 'running', 'test', 'now', '{"input":{}}', '{}', '{}')`,
  );
  const ids = [];
  db.transaction(() => {
    for (let i = 0; i < RUNS + PAGE_RUNS; i++) {
      ids.push(crypto.randomUUID());
      accept.run(ids[i], `ws-${i % 8}`);
    }
  })();
  const end = db.prepare(`UPDATE runs SET status = 'succeeded', finished_at = 'now' WHERE id = ?`);
  const endGroup = db.transaction((from, to) => {
    for (let k = from; k < Math.min(from + PER_COMMIT, to); k++) end.run(ids[k]);
  });
  const cpu = () => {
    const { user, system } = process.cpuUsage();
    return user + system;
  };
  let spent = 0;
  for (let i = 0; i < RUNS; i += PER_COMMIT) {
    const t = cpu();
    endGroup(i, RUNS);
    if (i >= WARM) spent += cpu() - t;
  }
  // The WAL's pages per run end: what its commits wrote, with no checkpoint in between. A page costs
  // its commit a write of 4 KiB (and a checkpoint's later), whatever the machine's noise.
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.pragma('wal_autocheckpoint = 0');
  for (let i = RUNS; i < RUNS + PAGE_RUNS; i += PER_COMMIT) endGroup(i, RUNS + PAGE_RUNS);
  const frames = Math.max(0, fs.statSync(path.join(dir, 'build.db-wal')).size - 32) / (4096 + 24);
  const deliveries = db.prepare('SELECT COUNT(*) FROM event_deliveries').pluck().get();
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return { perRun: spent / (RUNS - WARM), pagesPerRun: frames / PAGE_RUNS, deliveries };
}

const only = argOf('--only', 'none,trigger,fan-out,delivery,full').split(',');
console.log(
  `${RUNS} runs ended, ${PER_COMMIT} per transaction, 8 workspaces with an endpoint each; SQLite ${new Database(':memory:').prepare('SELECT sqlite_version()').pluck().get()}`,
);
console.log('| variant | CPU µs per run end | WAL pages per run end | deliveries written |');
console.log('| --- | --- | --- | --- |');
for (const variant of only) {
  const { perRun, pagesPerRun, deliveries } = measure(variant);
  console.log(`| ${variant} | ${perRun.toFixed(1)} | ${pagesPerRun.toFixed(2)} | ${deliveries} |`);
}
