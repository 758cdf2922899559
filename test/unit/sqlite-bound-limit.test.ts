// SQLite (3.47 and later) plans a statement with the value bound to a bare `LIMIT ?` and marks the
// statement to be prepared again whenever that parameter is bound, so every run of it re-prepared:
// 15 µs for a short statement, 85 µs for a long one, and a claim of event deliveries spent most of
// its time there (docs/benchmarks.md, scripts/bench-sqlite-limit.js). `LIMIT CAST(? AS INTEGER)`
// is an expression the planner does not read. This guard keeps a bare bound LIMIT or OFFSET out of
// every statement the SQLite adapter prepares (its own files and the ones it shares with PostgreSQL).
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/paths';

// (`${…}` is a template's own text, a whole number written into the statement: run-lists.ts.)
const BARE_BOUND = /\b(LIMIT|OFFSET)\s+(\?\d*|[@:][A-Za-z_]\w*|\$(?!\{)\w*)/g;

/** A line of a comment (`//`, or inside a block comment): prose may name the bare form. */
const isComment = (line: string): boolean => /^\s*(\/\/|\*|\/\*)/.test(line);

function sourcesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? sourcesUnder(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

describe('statements the SQLite adapter prepares', () => {
  it('bind no LIMIT or OFFSET bare (each run would prepare the statement again)', () => {
    const offenders: string[] = [];
    for (const dir of ['src/store/sqlite', 'src/store/shared']) {
      for (const file of sourcesUnder(path.join(projectRoot, dir))) {
        for (const [n, line] of fs.readFileSync(file, 'utf8').split('\n').entries()) {
          if (isComment(line)) continue;
          for (const match of line.matchAll(BARE_BOUND)) offenders.push(`${path.relative(projectRoot, file)}:${n + 1}: ${match[0]}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });

  it('are caught by the guard when written bare', () => {
    expect('ORDER BY id LIMIT ?'.match(BARE_BOUND)).toEqual(['LIMIT ?']);
    expect('ORDER BY id LIMIT @limit OFFSET $2'.match(BARE_BOUND)).toEqual(['LIMIT @limit', 'OFFSET $2']);
    expect('ORDER BY id LIMIT CAST(@limit AS INTEGER)'.match(BARE_BOUND)).toBeNull();
    expect(`ORDER BY id LIMIT \${limitSql}`.match(BARE_BOUND)).toBeNull(); // a template's own text
    expect(isComment('// SQLite plans with a bare `LIMIT ?`')).toBe(true);
    expect(isComment("  const page = db.prepare('SELECT id FROM t LIMIT ?');")).toBe(false);
  });
});
