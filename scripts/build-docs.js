#!/usr/bin/env node
// Builds the Redoc page served at /docs into generated/docs/index.html. Redoc's scripts are inlined
// (--inlineBundle), so the page works with no internet access. The page is a build product
// (about 2.6 MB): it is not committed; `npm install` (prepare) and `npm run generate` build it.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const out = path.join(root, 'generated', 'docs', 'index.html');
fs.mkdirSync(path.dirname(out), { recursive: true });
execFileSync(
  process.execPath,
  [require.resolve('@redocly/cli/bin/cli.js'), 'build-docs', 'openapi.yaml', '--inlineBundle', '--title', 'Build API', '-o', out],
  { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] },
);
process.stdout.write(`docs: ${path.relative(root, out)} (${Math.round(fs.statSync(out).size / 1024)} KiB)\n`);
