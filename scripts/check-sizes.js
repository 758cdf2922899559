#!/usr/bin/env node
// Keeps src/ readable (docs/architecture.md): no source file over 400 lines, no function over 90
// lines unless the comment just above it says why it must be (a line with "long because"). Run by
// `npm run lint:sizes`, part of `npm test`. Uses the TypeScript compiler's parser, so what counts as
// a function is what the language says.
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

// Counted as the formatter (biome, 160 columns) lays the code out: what was one long line is
// several, about 13 % more lines for the same code than the 350 and 80 these were before it.
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 90;
const EXCUSE = /long because/i;

function sourceFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

const isFunction = (node) =>
  ts.isFunctionDeclaration(node) ||
  ts.isFunctionExpression(node) ||
  ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node);

function problemsOf(file) {
  const text = fs.readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const problems = [];
  const lines = source.getLineAndCharacterOfPosition(text.length).line + 1;
  if (lines > MAX_FILE_LINES) problems.push(`${file}: ${lines} lines (at most ${MAX_FILE_LINES})`);
  const visit = (node) => {
    if (isFunction(node) && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const length = end - start + 1;
      // The comment that explains it sits above the statement the function is part of.
      let holder = node;
      while (holder.parent && !ts.isSourceFile(holder.parent) && !ts.isBlock(holder.parent) && !ts.isClassDeclaration(holder.parent)) holder = holder.parent;
      const comments = (ts.getLeadingCommentRanges(text, holder.getFullStart()) ?? []).map((c) => text.slice(c.pos, c.end));
      if (length > MAX_FUNCTION_LINES && !comments.some((c) => EXCUSE.test(c))) {
        const name = node.name?.getText(source) ?? '(anonymous)';
        problems.push(
          `${file}:${start + 1}: function ${name} has ${length} lines (at most ${MAX_FUNCTION_LINES}, or a comment above it saying why it is long because …)`,
        );
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return problems;
}

const root = path.join(__dirname, '..');
const problems = sourceFiles(path.join(root, 'src')).flatMap((file) => problemsOf(path.relative(root, file)));
if (problems.length) {
  process.stderr.write(`${problems.join('\n')}\n`);
  process.exit(1);
}
process.stdout.write('sizes: every file and function of src/ within bounds\n');
