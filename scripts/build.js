#!/usr/bin/env node
// `npm run build`: compiles the TypeScript sources into dist/ (tsc -p tsconfig.build.json) and
// records what it compiled (a hash of every input, and the compiler's version) in
// dist/.build-inputs. `--if-stale` (npm start's prestart) compiles only when that record differs
// from the inputs as they are now, so that starting a checkout whose build is current costs a
// hash of its sources (tens of milliseconds) instead of a compile (seconds).
'use strict';
const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const RECORD = path.join(root, 'dist', '.build-inputs');
/** What tsconfig.build.json compiles, what decides how, and the spec the request validators are compiled from. */
const CONFIGS = ['tsconfig.json', 'tsconfig.build.json', 'openapi.yaml'];
const SOURCE_DIRS = ['src', 'generated'];

function sourcesIn(dir) {
  const found = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...sourcesIn(full));
    else if (/\.(ts|tsx|json)$/.test(entry.name)) found.push(full);
  }
  return found;
}

/** One hash of the inputs: each file's path and bytes, in a fixed order, and the compiler's version. */
function inputsHash() {
  const hash = crypto.createHash('sha256');
  hash.update(`typescript ${require('typescript/package.json').version}\0`);
  const files = [...CONFIGS.map((f) => path.join(root, f)), ...SOURCE_DIRS.flatMap((d) => sourcesIn(path.join(root, d)))];
  for (const file of files.sort())
    hash
      .update(`${path.relative(root, file)}\0`)
      .update(fs.readFileSync(file))
      .update('\0');
  return hash.digest('hex');
}

const ifStale = process.argv.includes('--if-stale');
const inputs = inputsHash();
const built = fs.existsSync(path.join(root, 'dist', 'src', 'cli.js')) && fs.existsSync(RECORD) && fs.readFileSync(RECORD, 'utf8').trim();
if (ifStale && built === inputs) process.exit(0);
const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
// The spec's request validators as ajv's standalone code, so that a start does not compile them
// (src/http/request-validators.ts). In a process of its own: the compiled dist/ is loaded fresh.
const validators = spawnSync(
  process.execPath,
  [
    '-e',
    "require('./dist/src/http/openapi').buildRequestValidators(require('./dist/src/http/spec').loadSpec()).catch((err) => { console.error(err); process.exit(1); })",
  ],
  { cwd: root, stdio: 'inherit' },
);
if (validators.status !== 0) process.exit(validators.status ?? 1);
fs.writeFileSync(RECORD, `${inputs}\n`);
