#!/usr/bin/env node
// The `build-api` command. The TypeScript sources are compiled to dist/ by `npm install` (prepare).
'use strict';
require('../dist/src/cli.js').main(process.argv.slice(2));
