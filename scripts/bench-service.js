// The built service started for a benchmark script: `node bin/build-api.js serve` on a free port with
// no drain, its log in `logFile`; resolves with the process and its URL once it says it listens.
// BENCH_CPU_PROF=<dir>: the service writes a CPU profile there (scripts/profile-summary.js reads it).
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');

const root = path.join(__dirname, '..');

function serve(env, logFile) {
  return new Promise((resolve, reject) => {
    const out = fs.openSync(logFile, 'w');
    const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    const child = spawn(process.execPath, [...profile, path.join(root, 'bin', 'build-api.js'), 'serve'], {
      cwd: root,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DRAIN_SECONDS: '0', ...env },
      stdio: ['ignore', out, 'inherit'],
    });
    const timer = setInterval(() => {
      for (const line of fs.readFileSync(logFile, 'utf8').split('\n')) {
        if (line.includes('"build-api listening"')) {
          clearInterval(timer);
          resolve({ child, url: `http://127.0.0.1:${JSON.parse(line).address.port}` });
        }
      }
    }, 50);
    child.once('exit', (code) => {
      clearInterval(timer);
      reject(new Error(`the service exited with ${code}`));
    });
  });
}

module.exports = { serve };
