// No backtracking on user text (issue 23). Two guards:
//  - every regular expression written in src/ (a literal, or `new RegExp` of a literal) and every
//    `pattern:` of openapi.yaml (ajv applies them to request values) is proven free of super-linear
//    backtracking by recheck (a maintained ReDoS checker: automaton analysis, then fuzzing);
//  - every parser that reads request or run data is timed with pathological input of its field's
//    largest size (what nginx-style headers and the 64 KiB body allow).
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import ts from 'typescript';
import { checkSync } from 'recheck';
import { Webhook } from 'standardwebhooks';
import { projectRoot, specPath } from '../../src/paths';
import { parseIfMatch } from '../../src/domain/etag';
import { cronProblem, nextDueAfter } from '../../src/domain/schedule';
import { referencesIn } from '../../src/domain/templates';
import { decodeRunCursor } from '../../src/services/run-lists';
import { positionOf } from '../../src/services/run-events';
import { loggablePath } from '../../src/log';
import { parseCallLine } from '../../src/runtime/models/scripted';
import { gradeDeterministic } from '../../src/domain/evals/deterministic-checks';

/** Every regex literal in src/, and every `new RegExp('…')` of a string literal, with where it is. */
function regexesInSource(): { where: string; source: string; flags: string }[] {
  const found: { where: string; source: string; flags: string }[] = [];
  const files = (dir: string): string[] =>
    fs
      .readdirSync(dir, { withFileTypes: true })
      .flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
  for (const file of files(path.join(projectRoot, 'src'))) {
    const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      const where = `${path.relative(projectRoot, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
      if (ts.isRegularExpressionLiteral(node)) {
        const text = node.text;
        const end = text.lastIndexOf('/');
        found.push({ where, source: text.slice(1, end), flags: text.slice(end + 1) });
      } else if (ts.isNewExpression(node) && node.expression.getText() === 'RegExp' && node.arguments?.[0] && ts.isStringLiteral(node.arguments[0])) {
        found.push({ where, source: node.arguments[0].text, flags: node.arguments[1] && ts.isStringLiteral(node.arguments[1]) ? node.arguments[1].text : '' });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

/** Every `pattern:` in openapi.yaml (ajv compiles them with the `u` flag). */
function specPatterns(): { where: string; source: string; flags: string }[] {
  const found: { where: string; source: string; flags: string }[] = [];
  const walk = (value: unknown, at: string) => {
    if (Array.isArray(value)) for (const [i, v] of value.entries()) walk(v, `${at}[${i}]`);
    else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        if (k === 'pattern' && typeof v === 'string') found.push({ where: `openapi.yaml ${at}`, source: v, flags: 'u' });
        else walk(v, `${at}.${k}`);
      }
    }
  };
  walk(yaml.load(fs.readFileSync(specPath, 'utf8')), '');
  return found;
}

/** Regexes that never see a request or run data, and why (by file and source, not line). */
const NOT_USER_TEXT: Record<string, string> = {
  'src/http/openapi.ts /\\{([^}]+)\\}/g': "openapi.yaml's own paths, compiled into routes at start",
  'src/http/openapi.ts /\\{[^}]+\\}/': "openapi.yaml's own paths, compiled into routes at start",
  'src/http/openapi.ts /\\{[^}]+\\}/g': "openapi.yaml's own paths, compiled into routes at start",
};

test('every regular expression in src/ and every pattern of openapi.yaml is linear (recheck)', () => {
  const all = [...regexesInSource(), ...specPatterns()].filter((r) => !NOT_USER_TEXT[`${r.where.split(':')[0]} /${r.source}/${r.flags}`]);
  expect(all.length).toBeGreaterThan(30); // the scan found them
  const unsafe = all
    .map((r) => ({ ...r, result: checkSync(r.source, r.flags, { timeout: 10_000 }) }))
    .filter((r) => r.result.status !== 'safe')
    .map((r) => `${r.where} /${r.source}/${r.flags}: ${r.result.status}${r.result.status === 'vulnerable' ? ` (${r.result.complexity.summary})` : ''}`);
  expect(unsafe).toEqual([]);
}, 120_000);

test('the checker itself finds what the templates regex was (it cannot pass a test that cannot fail)', () => {
  expect(checkSync('\\{\\{\\s*([^{}]*?)\\s*\\}\\}', 'g').status).toBe('vulnerable');
});

const evalRun = (finalText: string) => ({ status: 'succeeded', finalText, toolCalls: [], steps: 1, credits: 1 });

// The largest values that reach each parser: a header is at most node's 16 KiB, a body 64 KiB.
const HEADER = 16 * 1024;
const BODY = 64 * 1024;

test.each([
  ['If-Match', () => parseIfMatch(`${'"a", '.repeat(HEADER / 5)}"b`)],
  ['If-Match (spaces)', () => parseIfMatch(`"${' '.repeat(HEADER)}`)],
  ['Last-Event-ID', () => positionOf('9'.repeat(HEADER))],
  ['cursor', () => decodeRunCursor(Buffer.from(`{"id":"${' '.repeat(BODY)}"}`).toString('base64url'))],
  ['cron', () => cronProblem(`${'1,'.repeat(59)}1 ${'* '.repeat(20)}`)],
  ['cron (never due)', () => nextDueAfter('0 0 31 2 *', 'UTC', Date.now())],
  ['templates', () => referencesIn(`{{${' '.repeat(BODY)}`)],
  ['a /call line', () => parseCallLine(`/call x${' '.repeat(BODY)}a\rb`)],
  ['a logged path', () => loggablePath(`/hooks/${'%2F'.repeat(HEADER / 3)}`)],
  // A run's final text may be 1 MiB (RUN_OUTPUT_BYTES); the patterns are a tenant's.
  ['an eval regex', () => gradeDeterministic({ type: 'regex', pattern: '(a+)+$|(?i)x|y' }, evalRun(`${'a'.repeat(1024 * 1024)}!`))],
  [
    "an eval json_schema's patterns",
    () => gradeDeterministic({ type: 'json_schema', schema: { items: { pattern: '^(a|a)+$' } } }, evalRun(JSON.stringify(['a'.repeat(64_000)]))),
  ],
  [
    'Standard Webhooks headers',
    () => {
      try {
        new Webhook(`whsec_${Buffer.alloc(32).toString('base64')}`).verify(Buffer.alloc(BODY), {
          'webhook-id': 'x'.repeat(HEADER),
          'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
          'webhook-signature': 'v1,x '.repeat(HEADER / 5),
        });
      } catch {
        // refused, as it should be: only the time matters here
      }
    },
  ],
])('%s: pathological input of the largest size is read in linear time', (_name, parse) => {
  const started = performance.now();
  try {
    parse();
  } catch {
    // a refusal is fine; only the time matters
  }
  expect(performance.now() - started).toBeLessThan(250);
});
