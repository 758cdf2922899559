// npm start's prestart (scripts/build.js --if-stale) compiles only when the sources changed since
// the last build: on a current build it leaves dist/ as it is (issue 41: it recompiled everything
// at every start, 17 s before the first answer).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/paths';

test('the prestart leaves a current build alone: nothing in dist/ is written again', () => {
  const built = path.join(projectRoot, 'dist', 'src', 'cli.js');
  const record = path.join(projectRoot, 'dist', '.build-inputs');
  // The suite runs after `npm run build` (npm test, .ci/run), which records its inputs.
  expect(fs.existsSync(record)).toBe(true);
  const before = [fs.statSync(built).mtimeMs, fs.statSync(record).mtimeMs];
  const run = spawnSync(process.execPath, [path.join(projectRoot, 'scripts', 'build.js'), '--if-stale'], { cwd: projectRoot, encoding: 'utf8' });
  expect([run.status, run.stdout, run.stderr]).toEqual([0, '', '']);
  expect([fs.statSync(built).mtimeMs, fs.statSync(record).mtimeMs]).toEqual(before);
});
