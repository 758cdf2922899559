#!/usr/bin/env node
// What a bare bound LIMIT costs on SQLite (test/unit/sqlite-bound-limit.test.ts): one statement, run
// 20,000 times with `LIMIT ?`, `LIMIT CAST(? AS INTEGER)` and `LIMIT 4`, short and padded with
// conditions (a longer statement takes longer to prepare again). SQLite 3.47 and later plan with a
// bare LIMIT's bound value, so each binding makes the statement prepare again.
//
//   node scripts/bench-sqlite-limit.js
'use strict';
const { openSqlite } = require('../dist/src/sqlite-driver');

const RUNS = 20_000;
const db = openSqlite(':memory:');
db.exec('CREATE TABLE t (a INTEGER, b INTEGER, c TEXT); CREATE INDEX t_ab ON t (a, b);');
const insert = db.prepare('INSERT INTO t VALUES (?, ?, ?)');
db.transaction(() => {
  for (let i = 0; i < 10_000; i++) insert.run(i % 10, i, 'x');
})();
console.log(`SQLite ${db.prepare('SELECT sqlite_version()').pluck().get()}, µs per run of the statement`);
console.log('| statement | LIMIT ? | LIMIT CAST(? AS INTEGER) | LIMIT 4 |');
console.log('| --- | --- | --- | --- |');
for (const [name, pad] of [
  ['short', ''],
  ['ten more conditions', " AND (c IS NOT NULL OR c = 'a')".repeat(10)],
]) {
  const cells = [];
  for (const limit of ['?', 'CAST(? AS INTEGER)', '4']) {
    const statement = db.prepare(`SELECT b FROM t WHERE a = ?${pad} ORDER BY b LIMIT ${limit}`).pluck();
    const args = limit === '4' ? [3] : [3, 4];
    for (let i = 0; i < 2000; i++) statement.all(...args); // warm
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < RUNS; i++) statement.all(...args);
    cells.push((Number(process.hrtime.bigint() - t0) / 1000 / RUNS).toFixed(1));
  }
  console.log(`| ${name} | ${cells.join(' | ')} |`);
}
