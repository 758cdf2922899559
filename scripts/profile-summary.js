#!/usr/bin/env node
// Summarises a V8 CPU profile (`node --cpu-prof`, e.g. from `node scripts/bench.js --cpu-prof
// <dir>`): self time by function and by package, so an optimisation starts from what costs most.
//
//   node scripts/profile-summary.js <file.cpuprofile | dir (newest profile)> [--top 40] [--total]
// --total adds time by function including what it calls (each function counted once per sample),
// which shows what a whole step of a request costs. --from/--to (seconds into the profile) keep only
// the samples of one stretch, e.g. one scenario without the service's start-up.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '40' }, total: { type: 'boolean', default: false }, from: { type: 'string' }, to: { type: 'string' } },
});
let file = positionals[0];
if (!file) throw new Error('usage: profile-summary.js <file.cpuprofile | dir>');
if (fs.statSync(file).isDirectory()) {
  const newest = fs
    .readdirSync(file)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(file, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  if (!newest) throw new Error(`no .cpuprofile in ${file}`);
  file = newest;
}
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));

// Self time per node: samples name the node that was on top of the stack.
// Shares are of the busy samples: the service idles while the bench seeds it and runs baselines.
const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
const from = Number(values.from ?? 0) * 1e6;
const to = Number(values.to ?? Infinity) * 1e6;
const hits = new Map();
let at = 0; // µs since the profile started
profile.samples.forEach((id, i) => {
  at += profile.timeDeltas[i];
  if (at >= from && at < to && !idle.has(id)) hits.set(id, (hits.get(id) ?? 0) + 1);
});
const total = [...hits.values()].reduce((a, b) => a + b, 0);

/** The package a script belongs to (node_modules/<name>), `node:` internals, or `app`. */
function packageOf(url) {
  if (!url) return '(native, gc)';
  if (url.startsWith('node:')) return 'node internals';
  const parts = url.split('node_modules/');
  if (parts.length > 1) {
    const rest = parts[parts.length - 1].split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  return 'app';
}

function nameOf({ functionName, url, lineNumber }) {
  const where = url ? `${url.replace(/^file:\/\//, '').replace(`${process.cwd()}/`, '')}:${lineNumber + 1}` : '';
  return `${functionName || '(anonymous)'} ${where}`;
}

const byFunction = new Map();
const byPackage = new Map();
for (const node of profile.nodes) {
  const self = hits.get(node.id) ?? 0;
  if (!self) continue;
  const key = nameOf(node.callFrame);
  byFunction.set(key, (byFunction.get(key) ?? 0) + self);
  const { url } = node.callFrame;
  const pkg = packageOf(url);
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + self);
}

const pct = (n) => `${((100 * n) / total).toFixed(1).padStart(5)}%`;
const top = (map, n) => [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
console.log(`${path.basename(file)}: ${total} busy samples of ${profile.samples.length}`);
console.log('\nself time by package');
for (const [name, n] of top(byPackage, 20)) console.log(`${pct(n)}  ${name}`);
console.log('\nself time by function');
for (const [name, n] of top(byFunction, Number(values.top))) console.log(`${pct(n)}  ${name}`);

if (values.total) {
  // Inclusive time: a sample counts for every distinct function on its stack.
  const parentOf = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const nodeById = new Map(profile.nodes.map((n) => [n.id, n]));
  const inclusive = new Map();
  for (const [id, n] of hits) {
    const seen = new Set();
    for (let at = id; at !== undefined; at = parentOf.get(at)) seen.add(nameOf(nodeById.get(at).callFrame));
    for (const key of seen) inclusive.set(key, (inclusive.get(key) ?? 0) + n);
  }
  console.log('\ntotal time by function (with what it calls)');
  for (const [name, n] of top(inclusive, Number(values.top))) console.log(`${pct(n)}  ${name}`);
}
