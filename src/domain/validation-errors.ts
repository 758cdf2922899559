// Turns ajv's errors for a request into one sentence per problem, each naming the JSON path as a
// caller writes it (`body.triggers[0].cron`, `If-Match`, `runId`) and the rule in plain words.
import type { ErrorObject } from 'ajv';

const MAX_PROBLEMS = 20;

const PATTERN_WORDS: Record<string, string> = {
  '^[a-z0-9]+(-[a-z0-9]+)*$': 'lowercase letters and digits in groups joined by single hyphens',
  Z$: 'a UTC date-time ending in Z',
  '^"[^"]+"$': 'a quoted entity tag',
  '^(\\*|"[^"]*"(\\s*,\\s*"[^"]*")*)$': '* or the quoted updated_at of your last read (the ETag)',
  '^[^\\u0000-\\u001F\\u007F-\\u009F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]*$':
    'text without control characters (tabs and newlines included), line or paragraph separators, or bidirectional overrides, embeddings or isolates (U+202A-U+202E, U+2066-U+2069)',
};

const HEADER_NAMES: Record<string, string> = { 'if-match': 'If-Match' };

/** `/requestBody/triggers/0/cron` → `body.triggers[0].cron`; `/path/runId` → `runId`. */
export function callerPath(instancePath: string): string {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const [where, ...rest] = parts;
  let head: string;
  if (where === 'requestBody') head = 'body';
  else if (where === 'header') return HEADER_NAMES[rest[0] ?? ''] ?? rest.join('.');
  else if (where === 'path') return rest.join('.') || 'path';
  else if (where === 'query') head = 'query';
  else head = where ?? '';
  return rest.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : `${acc}.${p}`), head);
}

function child(path: string, member: string): string {
  if (path === 'If-Match' || !path) return member;
  return `${path}.${member}`;
}

function quoteList(values: unknown[]): string {
  return values.map((v) => (v === null ? 'null' : typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
}

/** One error, in words (without its path), or null when another error already says it. */
function rule(e: ErrorObject, discriminatorValues: (path: string) => string[]): { path: string; text: string } | null {
  const path = callerPath(e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required': {
      const member = String(p.missingProperty);
      return { path: child(path, HEADER_NAMES[member] ?? member), text: 'required' };
    }
    case 'additionalProperties':
      return { path: child(path, String(p.additionalProperty)), text: 'not allowed here (unknown or read-only member)' };
    case 'type':
      return { path, text: `must be ${p.type === 'integer' ? 'a whole number' : `of type ${String(p.type)}`}` };
    case 'enum':
      return { path, text: `must be one of ${quoteList(p.allowedValues as unknown[])}` };
    case 'minLength':
      return { path, text: `must be at least ${String(p.limit)} character${p.limit === 1 ? '' : 's'} long` };
    case 'maxLength':
      return { path, text: `must be at most ${String(p.limit)} characters long` };
    case 'minItems':
      return { path, text: `must have at least ${String(p.limit)} item${p.limit === 1 ? '' : 's'}` };
    case 'maxItems':
      return { path, text: `must have at most ${String(p.limit)} items` };
    case 'maxProperties':
      return { path, text: `must have at most ${String(p.limit)} members` };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { path, text: `must be ${String(p.comparison)} ${String(p.limit)}` };
    case 'pattern': {
      const pattern = String(p.pattern);
      return { path, text: `must be ${PATTERN_WORDS[pattern] ?? `text matching ${pattern}`}` };
    }
    case 'format':
      return {
        path,
        text: `must be a valid ${p.format === 'uuid' ? 'UUID' : p.format === 'date-time' ? 'ISO 8601 date-time with Z or a numeric offset' : String(p.format)}`,
      };
    case 'discriminator': {
      const tag = String(p.tag);
      const allowed = quoteList(discriminatorValues(path));
      return p.error === 'mapping'
        ? { path: child(path, tag), text: `must be one of ${allowed}` }
        : { path: child(path, tag), text: `required: one of ${allowed}` };
    }
    default:
      return { path, text: e.message ?? `breaks the rule '${e.keyword}'` };
  }
}

/**
 * oneOf/anyOf failures: when a branch's type matched the value, that branch's own errors explain
 * the failure; otherwise the value had none of the allowed forms, and the message lists them.
 */
function collapseAlternatives(errors: ErrorObject[]): ErrorObject[] {
  const alternatives = errors.filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf');
  if (!alternatives.length) return errors;
  let result = errors;
  for (const alt of alternatives) {
    const prefix = `${alt.schemaPath}/`;
    const branchErrors = result.filter((e) => e.schemaPath.startsWith(prefix));
    const byBranch = new Map<string, ErrorObject[]>();
    for (const e of branchErrors) {
      const branch = e.schemaPath.slice(prefix.length).split('/', 1)[0] as string;
      byBranch.set(branch, [...(byBranch.get(branch) ?? []), e]);
    }
    const typeMatches = [...byBranch.values()].filter((list) => !list.some((e) => e.keyword === 'type' && e.instancePath === alt.instancePath));
    const forms = [...byBranch.values()].map((list) => describeForm(list));
    // The explanation takes the place of the oneOf/anyOf error, so problems keep their order.
    const explanation =
      typeMatches.length === 1 ? (typeMatches[0] as ErrorObject[]) : [{ ...alt, keyword: 'alternatives', message: `must be ${forms.join(' or ')}` }];
    result = result.flatMap((e) => (e === alt ? explanation : branchErrors.includes(e) ? [] : [e]));
  }
  return result;
}

function describeForm(list: ErrorObject[]): string {
  const enumError = list.find((e) => e.keyword === 'enum');
  if (enumError) return quoteList((enumError.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)));
  const formatError = list.find((e) => e.keyword === 'format');
  if (formatError) return (formatError.params as { format: string }).format === 'uuid' ? 'a UUID' : `a ${String(formatError.params.format)}`;
  const patternError = list.find((e) => e.keyword === 'pattern');
  if (patternError) return PATTERN_WORDS[String(patternError.params.pattern)] ?? `text matching ${String(patternError.params.pattern)}`;
  const typeError = list.find((e) => e.keyword === 'type');
  return typeError ? `of type ${String(typeError.params.type)}` : 'another form';
}

export function describeValidationErrors(errors: ErrorObject[], discriminatorValues: (path: string) => string[]): string {
  const lines: string[] = [];
  for (const e of collapseAlternatives(errors)) {
    const described = rule(e, discriminatorValues);
    if (!described) continue;
    const line = `${described.path}: ${described.text}`;
    if (!lines.includes(line)) lines.push(line);
  }
  const shown = lines.slice(0, MAX_PROBLEMS);
  if (lines.length > MAX_PROBLEMS) shown.push(`and ${lines.length - MAX_PROBLEMS} more problems`);
  return shown.join('; ');
}
