// OpenAPI 3.0 schemas as the JSON Schema an MCP tool declares (2020-12, which strict validators such
// as ajv compile): `nullable` becomes a `null` type, the keywords JSON Schema does not know
// (`example`, `discriminator`, `xml`, `externalDocs`, `x-…`) are left out, and references to
// `#/components/schemas/X` become `#/$defs/X`, with every schema a tool reaches copied into its
// `$defs` once. Written here rather than taken from @openapi-contrib/openapi-schema-to-json-schema,
// which would bring openapi-typescript 5, lodash and yargs into the service's dependencies for
// these few rules.

export type JsonSchema = Record<string, unknown>;

const COMPONENT_PREFIX = '#/components/schemas/';
const DROPPED = new Set(['example', 'discriminator', 'xml', 'externalDocs', 'nullable']);

/** The component schemas of a spec, converted on demand and collected per tool. */
export class SchemaConverter {
  private readonly converted = new Map<string, JsonSchema>();

  constructor(private readonly components: Record<string, unknown>) {}

  /**
   * `schema` converted, and the `$defs` it needs (every component it references, directly or through
   * other components). The result may be given to a tool as is: it names nothing outside itself.
   */
  standalone(schema: unknown): JsonSchema {
    const names = new Set<string>();
    const root = this.convert(schema, names);
    const defs: Record<string, JsonSchema> = {};
    for (let pending = [...names]; pending.length; ) {
      const name = pending.pop() as string;
      if (name in defs) continue;
      const reached = new Set<string>();
      defs[name] = this.component(name, reached);
      for (const next of reached) if (!(next in defs)) pending.push(next);
    }
    return Object.keys(defs).length ? { ...root, $defs: defs } : root;
  }

  /** A component schema converted (its references named in `reached`). */
  private component(name: string, reached: Set<string>): JsonSchema {
    const source = this.components[name];
    if (source === undefined) throw new Error(`openapi.yaml: no schema ${name} in components`);
    let done = this.converted.get(name);
    if (!done) this.converted.set(name, (done = this.convert(source, new Set())));
    collectReferences(done, reached);
    return done;
  }

  private convert(node: unknown, reached: Set<string>): JsonSchema {
    return convertNode(node, reached) as JsonSchema;
  }
}

function convertNode(node: unknown, reached: Set<string>): unknown {
  if (Array.isArray(node)) return node.map((item) => convertNode(item, reached));
  if (node === null || typeof node !== 'object') return node;
  const source = node as Record<string, unknown>;
  if (typeof source.$ref === 'string') {
    if (!source.$ref.startsWith(COMPONENT_PREFIX)) throw new Error(`openapi.yaml: unsupported schema reference ${source.$ref}`);
    const name = source.$ref.slice(COMPONENT_PREFIX.length);
    reached.add(name);
    return { $ref: `#/$defs/${name}` };
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(source)) {
    if (DROPPED.has(key) || key.startsWith('x-')) continue;
    if (key === 'properties' || key === 'patternProperties') out[key] = mapValues(value as Record<string, unknown>, (v) => convertNode(v, reached));
    else if (key === 'examples') {
      if (Array.isArray(value)) out[key] = value;
    } else if (key === 'enum' || key === 'default' || key === 'const' || key === 'required') out[key] = value;
    else out[key] = convertNode(value, reached);
  }
  return source.nullable === true ? nullable(out) : out;
}

/** A schema that also accepts null (OpenAPI 3.0's `nullable: true`). */
function nullable(schema: Record<string, unknown>): Record<string, unknown> {
  if (Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...schema.enum, null];
  if (typeof schema.type === 'string') return { ...schema, type: [schema.type, 'null'] };
  if (schema.type === undefined) return { anyOf: [schema, { type: 'null' }] };
  return schema;
}

function mapValues(record: Record<string, unknown>, f: (value: unknown) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) out[key] = f(value);
  return out;
}

/** The components a converted schema references (`#/$defs/X`). */
function collectReferences(node: unknown, into: Set<string>): void {
  if (Array.isArray(node)) for (const item of node) collectReferences(item, into);
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/$defs/')) into.add(value.slice('#/$defs/'.length));
      else if (key !== 'enum' && key !== 'default' && key !== 'const' && key !== 'examples') collectReferences(value, into);
    }
  }
}
