// fast-check arbitraries driven by openapi.yaml's request schemas, and single mutations of a valid
// value that break exactly one schema rule. Semantic fields (models, tools, crons...) take values the
// catalog accepts through `hints`, keyed by JSON path with array indexes written `[]`.
import fc from 'fast-check';
import { loadSpec } from '../../src/http/spec';

export type Schema = Record<string, unknown>;
export type Hints = Record<string, fc.Arbitrary<unknown> | 'omit'>;

const spec = loadSpec().document as { components: { schemas: Record<string, Schema> } };

export function resolve(schema: Schema): Schema {
  let current = schema;
  while (typeof current.$ref === 'string') {
    const name = current.$ref.split('/').pop() as string;
    current = spec.components.schemas[name] as Schema;
  }
  return current;
}

export function schemaNamed(name: string): Schema {
  return resolve({ $ref: `#/components/schemas/${name}` });
}

const SLUG_PART = fc.stringMatching(/^[a-z0-9]{1,6}$/);
const slugArbitrary = (max: number) =>
  fc.array(SLUG_PART, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('-').slice(0, max).replace(/-+$/, '') || 'x');
// Plain text that holds no template braces (a stray `{{steps...}}` would be a semantic error).
const text = (min: number, max: number) =>
  fc.string({ minLength: min, maxLength: Math.min(max, 24), unit: fc.constantFrom(...Array.from('abcdefghijklmnopqrstuvwxyz ÄéЖ中🙂-_.,:/')) });
const jsonLeaf = fc.oneof(fc.boolean(), fc.integer(), fc.constant(null), text(0, 12));

function stringArbitrary(schema: Schema): fc.Arbitrary<unknown> {
  const min = (schema.minLength as number | undefined) ?? 0;
  const max = (schema.maxLength as number | undefined) ?? 200;
  if (schema.format === 'uuid') return fc.uuid({ version: 4 });
  if (schema.format === 'date-time')
    return fc
      .date({ min: new Date('2020-01-01'), max: new Date('2030-01-01'), noInvalidDate: true })
      .map((d) => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z'));
  if (schema.pattern === '^[a-z0-9]+(-[a-z0-9]+)*$') return slugArbitrary(max);
  // A kept version's ref (VersionRef): its number, or `<document id>@<number>`.
  if (String(schema.pattern).startsWith('^([1-9][0-9]{0,8}|'))
    return fc.oneof(
      fc.integer({ min: 1, max: 999 }).map(String),
      fc.tuple(fc.uuid({ version: 4 }), fc.integer({ min: 1, max: 999 })).map(([id, n]) => `${id}@${n}`),
    );
  // A display name (Name): `text` holds no control or bidirectional character.
  if (String(schema.pattern).startsWith('^[^\\u0000-')) return text(Math.max(min, 0), max);
  if (schema.pattern) throw new Error(`no generator for pattern ${String(schema.pattern)}`);
  return text(Math.max(min, 0), max);
}

export function arbitraryFor(input: Schema, hints: Hints = {}, path = ''): fc.Arbitrary<unknown> {
  const hint = hints[path];
  if (hint && hint !== 'omit') return hint;
  const schema = resolve(input);
  let arb: fc.Arbitrary<unknown>;
  if (schema.oneOf || schema.anyOf) {
    arb = fc.oneof(...((schema.oneOf ?? schema.anyOf) as Schema[]).map((branch) => arbitraryFor(branch, hints, path)));
  } else if (schema.enum) {
    arb = fc.constantFrom(...(schema.enum as unknown[]).filter((v) => v !== null));
  } else if (schema.type === 'string') arb = stringArbitrary(schema);
  else if (schema.type === 'integer') arb = fc.integer({ min: (schema.minimum as number) ?? -1000, max: (schema.maximum as number) ?? 1000 });
  else if (schema.type === 'boolean') arb = fc.boolean();
  else if (schema.type === 'array') {
    const min = (schema.minItems as number) ?? 0;
    arb = fc.array(arbitraryFor(schema.items as Schema, hints, `${path}[]`), {
      minLength: min,
      maxLength: Math.min((schema.maxItems as number) ?? 3, min + 3),
    });
  } else if (schema.type === 'object' || schema.properties) {
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    const required = new Set((schema.required ?? []) as string[]);
    const keys = Object.keys(properties).filter((k) => hints[`${path}.${k}`] !== 'omit');
    const record = fc.record(Object.fromEntries(keys.map((k) => [k, arbitraryFor(properties[k] as Schema, hints, `${path}.${k}`)])), {
      requiredKeys: keys.filter((k) => required.has(k)),
    });
    const extra = schema.additionalProperties;
    if (extra && typeof extra === 'object') {
      arb = fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/), arbitraryFor(extra as Schema, hints, `${path}.*`), { maxKeys: 3 });
    } else if (extra === true && keys.length === 0) {
      arb = fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/), jsonLeaf, { maxKeys: 4 });
    } else arb = record;
  } else {
    arb = jsonLeaf; // any value
  }
  return schema.nullable ? fc.option(arb, { nil: null, freq: 4 }) : arb;
}

/** One way to break the schema at one place, and the path the error must name. */
export interface Mutation {
  rule: string;
  path: string;
  apply: (root: unknown) => unknown;
}

type Segment = string | number;

function setAt(root: unknown, at: Segment[], update: (parent: Record<string | number, unknown>, key: Segment) => void): unknown {
  const copy = structuredClone(root);
  let node = copy as Record<string | number, unknown>;
  for (const key of at.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  update(node, at[at.length - 1] as Segment);
  return copy;
}

const callerPath = (at: Segment[]) => at.reduce<string>((acc, k) => (typeof k === 'number' ? `${acc}[${k}]` : `${acc}.${k}`), 'body');

function wrongTypeValue(schema: Schema): unknown {
  switch (schema.type) {
    case 'string':
      return 12345;
    case 'integer':
      return 'twelve';
    case 'boolean':
      return 'yes';
    case 'array':
      return { not: 'an array' };
    default:
      return 'not an object';
  }
}

/** Every single mutation of `value` (valid against `schema`) that breaks one rule at one place. */
export function mutationsOf(value: unknown, input: Schema, at: Segment[] = []): Mutation[] {
  const schema = resolve(input);
  const path = callerPath(at);
  const out: Mutation[] = [];
  const replaceWith = (rule: string, next: unknown) => out.push({ rule, path, apply: (root) => (at.length ? setAt(root, at, (p, k) => (p[k] = next)) : next) });

  if (schema.oneOf && !schema.discriminator) return out; // alternatives: covered by their own members
  if (schema.oneOf && schema.discriminator) {
    const tag = (schema.discriminator as { propertyName: string }).propertyName;
    const branch = (schema.oneOf as Schema[])
      .map(resolve)
      .find((b) => ((b.properties as Record<string, Schema>)[tag]?.enum as unknown[])?.includes((value as Record<string, unknown>)[tag]));
    return branch ? mutationsOf(value, branch, at) : out;
  }
  if (schema.type && at.length) replaceWith('wrong type', wrongTypeValue(schema));
  if (schema.enum && schema.type === 'string') replaceWith('bad enum', 'not-a-listed-value');
  if (schema.format === 'uuid') replaceWith('bad format', 'not-a-uuid');
  if (schema.format === 'date-time') replaceWith('bad format', 'yesterday at noon');
  if (typeof value === 'string' && typeof schema.maxLength === 'number') replaceWith('over the length limit', 'x'.repeat(schema.maxLength + 1));
  if (typeof value === 'number' && typeof schema.maximum === 'number') replaceWith('over the maximum', schema.maximum + 1);
  if (Array.isArray(value)) {
    if (typeof schema.maxItems === 'number' && value.length > 0) {
      replaceWith(
        'over the item limit',
        Array.from({ length: (schema.maxItems as number) + 1 }, (_, i) => value[i % value.length]),
      );
    }
    for (const [i, item] of value.entries()) out.push(...mutationsOf(item, schema.items as Schema, [...at, i]));
  } else if (value && typeof value === 'object') {
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const key of (schema.required ?? []) as string[]) {
      out.push({
        rule: 'missing required member',
        path: callerPath([...at, key]),
        apply: (root) =>
          at.length
            ? setAt(root, at, (p, k) => delete (p[k] as Record<string, unknown>)[key])
            : (({ [key]: _gone, ...rest }) => rest)(root as Record<string, unknown>),
      });
    }
    if (schema.additionalProperties === false || schema.additionalProperties === undefined) {
      out.push({
        rule: 'unknown member',
        path: callerPath([...at, 'zz_unknown']),
        apply: (root) => (at.length ? setAt(root, at, (p, k) => ((p[k] as Record<string, unknown>).zz_unknown = 1)) : { ...(root as object), zz_unknown: 1 }),
      });
    }
    for (const [key, child] of Object.entries(value)) {
      const childSchema = properties[key] ?? (typeof schema.additionalProperties === 'object' ? (schema.additionalProperties as Schema) : undefined);
      if (childSchema) out.push(...mutationsOf(child, childSchema, [...at, key]));
    }
  }
  return out;
}
