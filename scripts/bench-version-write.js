#!/usr/bin/env node
// What keeping a version costs a replace in SQLite itself, without the service: one transaction per
// write of a document of the bench's size, as the store makes it (WAL, synchronous=NORMAL, the
// default checkpoint), two ways:
//   in-row:    the document's text in its own row, rewritten in place (the store before versions, 381bf69);
//   versioned: a new text row per version, a version row naming it, the document row's stamp
//              (migrations 013 and 016, today's store).
// Prints µs per write for each, alternating, and the difference: the part of a replace's cost that
// is the kept version's text (its new pages in the WAL, then their copy by the checkpoint).
//
//   node scripts/bench-version-write.js [--writes 20000] [--rounds 3]
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { openSqlite } = require('../dist/src/sqlite-driver');
const { agentDocument } = require('./bench-documents');

const { values } = parseArgs({ options: { writes: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '3' } } });
const WRITES = Number(values.writes);
const text = JSON.stringify(agentDocument(0));

function open(layout) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-version-write-'));
  const db = openSqlite(path.join(dir, 'bench.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE agents (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, slug TEXT NOT NULL, version INTEGER NOT NULL, stamp_us INTEGER NOT NULL, name TEXT, status TEXT, document TEXT);
    CREATE UNIQUE INDEX agents_slug ON agents (workspace_id, slug);
    CREATE TABLE texts (id INTEGER PRIMARY KEY, document TEXT NOT NULL);
    CREATE TABLE versions (document_id TEXT NOT NULL, version INTEGER NOT NULL, stamp_us INTEGER NOT NULL, author TEXT, changes TEXT NOT NULL, text_id INTEGER NOT NULL, PRIMARY KEY (document_id, version)) WITHOUT ROWID;`);
  db.prepare("INSERT INTO agents VALUES ('a', 'ws', 'agent', 1, 0, 'Agent', 'active', ?)").run(layout === 'in-row' ? text : null);
  const inRow = db.prepare("UPDATE agents SET version = version + 1, stamp_us = ?, document = ? WHERE id = 'a'");
  const stamp = db.prepare("UPDATE agents SET version = version + 1, stamp_us = ? WHERE id = 'a' RETURNING version").pluck();
  const keepText = db.prepare('INSERT INTO texts (document) VALUES (?)');
  const keep = db.prepare("INSERT INTO versions VALUES ('a', ?, ?, NULL, '[]', ?)");
  let n = 0;
  // Each write changes the description, as the bench's replaces do.
  const write = db.transaction(() => {
    const next = text.replace('"description":"', `"description":"write ${++n} `);
    if (layout === 'in-row') return inRow.run(n, next);
    const version = stamp.get(n);
    keep.run(version, n, keepText.run(next).lastInsertRowid);
  });
  return {
    write,
    close: () => {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function measure(layout) {
  const { write, close } = open(layout);
  for (let i = 0; i < 2000; i++) write(); // past the first checkpoints
  const started = process.hrtime.bigint();
  for (let i = 0; i < WRITES; i++) write();
  const micros = Number(process.hrtime.bigint() - started) / 1000 / WRITES;
  close();
  return micros;
}

const results = { 'in-row': [], versioned: [] };
for (let round = 0; round < Number(values.rounds); round++)
  for (const layout of round % 2 ? ['versioned', 'in-row'] : ['in-row', 'versioned']) results[layout].push(measure(layout));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const [inRow, versioned] = [median(results['in-row']), median(results.versioned)];
console.log(`document of ${text.length} bytes, ${WRITES} writes per round, median of ${values.rounds} rounds`);
console.log(`in-row:    ${inRow.toFixed(1)} µs per write`);
console.log(`versioned: ${versioned.toFixed(1)} µs per write (+${(versioned - inRow).toFixed(1)} µs: the kept version's text)`);
