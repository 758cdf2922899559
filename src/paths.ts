// Locates files that ship with the project (the spec, migrations, generated docs), whether the code
// runs from src/ (tests) or from dist/src/ (the built command).
import fs from 'node:fs';
import path from 'node:path';

function findProjectRoot(start: string): string {
  let dir = start;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'openapi.yaml')) && fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`openapi.yaml not found above ${start}`);
    dir = parent;
  }
}

export const projectRoot = findProjectRoot(__dirname);
export const specPath = path.join(projectRoot, 'openapi.yaml');
export const migrationsDir = path.join(projectRoot, 'src', 'store', 'sqlite', 'migrations');
export const generatedDocsDir = path.join(projectRoot, 'generated', 'docs');
export const pgMigrationsDir = path.join(projectRoot, 'src', 'store', 'postgres', 'migrations');
/** The spec's request validators, compiled by `npm run build` (http/request-validators.ts). */
export const requestValidatorsPath = path.join(projectRoot, 'dist', 'request-validators.js');
