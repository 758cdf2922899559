#!/usr/bin/env node
// The regression guard: `npm run bench:compare -- <ref> [bench options]` builds <ref> (a commit, a
// branch, a tag) in a worktree of its own under the system's temporary directory (kept, so that a
// second comparison with the same commit starts at once), builds this checkout, and runs
// `scripts/bench.js --against` on the two: the hot paths (read, 401, validate, replace on 32
// connections and on one, a workflow run, the realistic mix) in alternating rounds on SQLite, then
// the start-up times. Options after the ref go to bench.js and override these defaults (--only,
// --rounds, --seconds, --stores).
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const [ref, ...options] = process.argv.slice(2);
if (!ref || ref.startsWith('-')) {
  console.error('usage: npm run bench:compare -- <ref> [--only <scenario prefixes>] [--rounds N] [--seconds S] [--stores sqlite|postgres]');
  process.exit(2);
}

const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
const run = (command, args, cwd) => {
  const result = spawnSync(command, args, { cwd, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} (in ${cwd}) exited with ${result.status}`);
};

const commit = git('rev-parse', '--verify', `${ref}^{commit}`);
const dir = path.join(os.tmpdir(), `build-api-bench-${commit.slice(0, 12)}`);
/** Written once the worktree's install and build have finished: a half-made one is made again. */
const ready = path.join(dir, '.bench-ready');
if (!fs.existsSync(ready)) {
  git('worktree', 'prune');
  if (fs.existsSync(dir)) git('worktree', 'remove', '--force', dir);
  console.log(`== ${ref} (${commit.slice(0, 12)}): a worktree at ${dir}, installed and built (npm ci)`);
  git('worktree', 'add', '--detach', dir, commit);
  run('npm', ['ci', '--no-audit', '--no-fund'], dir); // `prepare` builds dist/
  fs.writeFileSync(ready, `${commit}\n`);
}
console.log('== this checkout, built');
run('npm', ['run', '--silent', 'build'], root);

const defaults = [
  '--only',
  'read agent,401,validate,replace,workflow test run,realistic mix',
  '--rounds',
  '4',
  '--seconds',
  '5',
  '--stores',
  'sqlite',
  '--startup',
];
run(process.execPath, [path.join(__dirname, 'bench.js'), '--against', dir, ...defaults, ...options], root);
