// A workspace's own apps (issue 44): each backed by an MCP server. What an app's settings are once
// defaults are filled, and what of an MCP server's tool list becomes the catalog's tools: names a
// tool slug can hold, schemas within bounds and without what a third party could make costly, and
// flags from annotations only where the app trusts them (MCP's defaults otherwise: a tool may
// write and destroy).
import type { components } from '../../generated/api';
import type { ToolDefinition } from './catalog';

export type McpSettings = components['schemas']['McpSettings'];
export type McpSettingsFull = components['schemas']['McpSettingsStored'] & object;
export type McpServerInfo = components['schemas']['McpServerInfo'] & object;

/** An app as written, its defaults filled: what the store keeps of its settings. */
export interface AppSettings {
  kind: 'service.app/v1';
  slug: string;
  name: string;
  description: string | null;
  mcp: McpSettingsFull;
}

/** The most tools an app may have: a server listing more fails the refresh. */
export const MAX_APP_TOOLS = 500;
/** The longest tool slug a step names (`<app>.<tool>`: ToolStepInput.tool). */
export const MAX_TOOL_SLUG = 120;
/** The most bytes one tool's argument schema may take as JSON. */
export const MAX_TOOL_SCHEMA_BYTES = 64 * 1024;
/** What of a tool's description the catalog keeps (characters). */
export const MAX_TOOL_DESCRIPTION = 2000;
/** How deep a tool's argument schema may nest. */
const MAX_SCHEMA_DEPTH = 32;

/** MCP's tool names (the 2025-11-25 revision: 1 to 128 of these). */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

export const MCP_DEFAULTS = { auth: 'none', timeout_ms: 10_000, output_bytes: 256 * 1024, trust_annotations: false } as const;

/** The app's settings as stored: the body's members, defaults filled, nothing else. */
export function appSettings(body: { slug: string; name: string; description?: string | null; mcp: McpSettings }): AppSettings {
  const { mcp } = body;
  return {
    kind: 'service.app/v1',
    slug: body.slug,
    name: body.name,
    description: body.description ?? null,
    mcp: {
      url: mcp.url,
      auth: mcp.auth ?? MCP_DEFAULTS.auth,
      timeout_ms: mcp.timeout_ms ?? MCP_DEFAULTS.timeout_ms,
      output_bytes: mcp.output_bytes ?? MCP_DEFAULTS.output_bytes,
      trust_annotations: mcp.trust_annotations ?? MCP_DEFAULTS.trust_annotations,
    },
  };
}

/** A tool as an MCP server lists it (the members this service reads). */
export interface ListedMcpTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: unknown;
  annotations?: { title?: string; readOnlyHint?: boolean; destructiveHint?: boolean };
}

export interface DiscoveredTools {
  tools: ToolDefinition[];
  skipped: { name: string; reason: string }[];
}

/**
 * The catalog's tools of app `app` from the server's list. A tool is read-only only when the app
 * trusts annotations and the server says so; destructive unless a trusted annotation says it is
 * not (or it is read-only). Names no slug can hold and schemas beyond bounds are skipped, saying why.
 */
export function toolsFromMcp(app: string, listed: readonly ListedMcpTool[], trust: boolean): DiscoveredTools {
  const tools: ToolDefinition[] = [];
  const skipped: DiscoveredTools['skipped'] = [];
  const seen = new Set<string>();
  for (const tool of listed) {
    const name = typeof tool.name === 'string' ? tool.name : '';
    const why = nameProblem(app, name) ?? (seen.has(name) ? 'listed twice' : null);
    const schema = why ? null : argumentSchema(tool.inputSchema);
    if (why || typeof schema === 'string') {
      skipped.push({ name: name.slice(0, 200), reason: why ?? (schema as string) });
      continue;
    }
    seen.add(name);
    const readOnly = trust && tool.annotations?.readOnlyHint === true;
    const destructive = !readOnly && !(trust && tool.annotations?.destructiveHint === false);
    tools.push({
      slug: `${app}.${name}`,
      name: displayName(tool),
      description: (typeof tool.description === 'string' ? tool.description : '').slice(0, MAX_TOOL_DESCRIPTION),
      read_only: readOnly,
      destructive,
      args_schema: schema as Record<string, unknown>,
    });
  }
  return { tools, skipped };
}

function nameProblem(app: string, name: string): string | null {
  if (!TOOL_NAME.test(name)) return 'the name is not an MCP tool name (1 to 128 of A-Z a-z 0-9 _ . -)';
  if (app.length + 1 + name.length > MAX_TOOL_SLUG) return `'${app}.${name}' is longer than ${MAX_TOOL_SLUG} characters, the most a tool slug has`;
  return null;
}

function displayName(tool: ListedMcpTool): string {
  const title = tool.title ?? tool.annotations?.title;
  return typeof title === 'string' && title.trim() ? title.trim().slice(0, 80) : tool.name;
}

/**
 * The tool's argument schema as the service checks arguments with it, or why it cannot be: an
 * object schema within MAX_TOOL_SCHEMA_BYTES and MAX_SCHEMA_DEPTH. What a third party could make
 * costly to evaluate is left out (the server checks its own arguments): regular expressions
 * (`pattern`, `patternProperties`: a backtracking engine runs them), `format`, and references
 * (`$ref`, `$dynamicRef`: a reference may loop, or name what is not there).
 */
function argumentSchema(schema: unknown): Record<string, unknown> | string {
  if (schema === undefined) return { type: 'object' };
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return 'its inputSchema is not an object';
  const text = JSON.stringify(schema);
  if (Buffer.byteLength(text) > MAX_TOOL_SCHEMA_BYTES) return `its inputSchema is larger than ${MAX_TOOL_SCHEMA_BYTES} bytes`;
  const kept = withoutCostly(schema, 0);
  if (kept === TOO_DEEP) return `its inputSchema nests deeper than ${MAX_SCHEMA_DEPTH} levels`;
  const object = kept as Record<string, unknown>;
  if (object.type !== undefined && object.type !== 'object') return 'its inputSchema is not of type object';
  return { ...object, type: 'object' };
}

const TOO_DEEP = Symbol('too deep');
/** Keywords left out of a third party's schema (see argumentSchema). */
const COSTLY = new Set(['pattern', 'patternProperties', 'format', '$ref', '$dynamicRef', '$recursiveRef', '$id', '$schema', '$anchor', '$dynamicAnchor']);
/** Keywords whose value is a schema, a list of schemas, or names mapped to schemas. */
const SUBSCHEMA = new Set([
  'items',
  'additionalItems',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
]);
const SUBSCHEMAS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const NAMED_SUBSCHEMAS = new Set(['properties', '$defs', 'definitions', 'dependentSchemas']);

/** A schema without the COSTLY keywords, at any depth; TOO_DEEP past MAX_SCHEMA_DEPTH. */
function withoutCostly(schema: unknown, depth: number): unknown {
  if (depth > MAX_SCHEMA_DEPTH) return TOO_DEEP;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema; // true, false, or not a schema (ajv says so)
  const out: Record<string, unknown> = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (COSTLY.has(keyword) || keyword === '__proto__') continue;
    const kept = keptValue(keyword, value, depth);
    if (kept === TOO_DEEP) return TOO_DEEP;
    out[keyword] = kept;
  }
  return out;
}

function keptValue(keyword: string, value: unknown, depth: number): unknown {
  if (SUBSCHEMAS.has(keyword) || (keyword === 'items' && Array.isArray(value))) return eachKept(Array.isArray(value) ? value : [], depth);
  if (SUBSCHEMA.has(keyword)) return withoutCostly(value, depth + 1);
  if (NAMED_SUBSCHEMAS.has(keyword) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const named: Record<string, unknown> = {};
    for (const [name, member] of Object.entries(value)) {
      const kept = withoutCostly(member, depth + 1);
      if (kept === TOO_DEEP) return TOO_DEEP;
      Object.defineProperty(named, name, { value: kept, enumerable: true, writable: true, configurable: true }); // `__proto__` is a name like any other here
    }
    return named;
  }
  return exceedsDepth(value, depth) ? TOO_DEEP : value; // data: enum, const, default, examples, required, descriptions
}

function eachKept(values: unknown[], depth: number): unknown {
  const out: unknown[] = [];
  for (const value of values) {
    const kept = withoutCostly(value, depth + 1);
    if (kept === TOO_DEEP) return TOO_DEEP;
    out.push(kept);
  }
  return out;
}

function exceedsDepth(value: unknown, depth: number): boolean {
  if (depth > MAX_SCHEMA_DEPTH) return true;
  if (value === null || typeof value !== 'object') return false;
  for (const member of Object.values(value)) if (exceedsDepth(member, depth + 1)) return true;
  return false;
}

/** What changed between two tool lists, by slug. */
export function toolChanges(before: readonly ToolDefinition[], after: readonly ToolDefinition[]): { added: string[]; removed: string[] } {
  const had = new Set(before.map((t) => t.slug));
  const has = new Set(after.map((t) => t.slug));
  return { added: [...has].filter((s) => !had.has(s)), removed: [...had].filter((s) => !has.has(s)) };
}
