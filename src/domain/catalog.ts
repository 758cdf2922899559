// The built-in catalog: the deterministic model and the tool apps every workspace has (docs/architecture.md: the catalog; the tools: docs/runs.md).
// Each tool carries the JSON schema its arguments must satisfy and its read-only/destructive flags.
export interface ToolDefinition {
  slug: string;
  name: string;
  description: string;
  read_only: boolean;
  destructive: boolean;
  args_schema: Record<string, unknown>;
}

export interface AppDefinition {
  slug: string;
  name: string;
  description: string;
  tools: ToolDefinition[];
}

export const TRIGGER_TYPES = ['webhook', 'poll', 'app_event'] as const;

const objectOf = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  additionalProperties: false,
  required,
  properties,
});
// No U+0000: a key is stored as text, which PostgreSQL cannot hold it in.
const key = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[^\\u0000]*$' };

function tool(slug: string, name: string, description: string, flags: 'read' | 'write' | 'destructive', args_schema: Record<string, unknown>): ToolDefinition {
  return { slug, name, description, read_only: flags === 'read', destructive: flags === 'destructive', args_schema };
}

export const BUILTIN_APPS: AppDefinition[] = [
  {
    slug: 'core',
    name: 'Core',
    description: 'Pure helpers: echo, templates, picking members, failing on purpose, waiting.',
    tools: [
      tool('core.echo', 'Echo', 'Returns its arguments.', 'read', { type: 'object', additionalProperties: true }),
      tool('core.template', 'Template', 'Renders {{name}} placeholders in template from values.', 'read',
        objectOf({ template: { type: 'string', maxLength: 20000 }, values: { type: 'object', additionalProperties: true } }, ['template'])),
      tool('core.pick', 'Pick', 'Returns the member of value at a dotted path, or null.', 'read',
        objectOf({ value: {}, path: { type: 'string', maxLength: 500 } }, ['value', 'path'])),
      tool('core.fail', 'Fail', 'Fails the step or call with message.', 'read',
        objectOf({ message: { type: 'string', minLength: 1, maxLength: 1000 } }, ['message'])),
      tool('core.sleep', 'Sleep', 'Waits ms milliseconds (at most 5000).', 'read',
        objectOf({ ms: { type: 'integer', minimum: 0, maximum: 5000 } }, ['ms'])),
    ],
  },
  {
    slug: 'http',
    name: 'HTTP',
    description: 'Outbound HTTP requests to public addresses.',
    tools: [
      tool('http.request', 'Request', 'Sends an HTTP request to a public address (following up to 5 redirects, each to a public address; 10 s and 1 MiB for the whole exchange) and returns the status, headers and body of the last response.', 'write',
        objectOf({
          method: { type: 'string', enum: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] },
          url: { type: 'string', minLength: 1, maxLength: 2000 },
          headers: { type: 'object', additionalProperties: { type: 'string' } },
          body: {},
        }, ['method', 'url'])),
    ],
  },
  {
    slug: 'kv',
    name: 'Key-value store',
    description: 'A per-workspace key-value store.',
    tools: [
      tool('kv.get', 'Get', 'Reads one key; value is null when the key is absent.', 'read', objectOf({ key }, ['key'])),
      tool('kv.list', 'List', 'Lists the keys, optionally those with a prefix.', 'read',
        objectOf({ prefix: { type: 'string', maxLength: 200 } })),
      tool('kv.set', 'Set', 'Stores value under key.', 'write', objectOf({ key, value: {} }, ['key', 'value'])),
      tool('kv.delete', 'Delete', 'Deletes one key.', 'destructive', objectOf({ key }, ['key'])),
    ],
  },
  {
    slug: 'time',
    name: 'Time',
    description: 'The current time.',
    tools: [tool('time.now', 'Now', 'Returns the current time as ISO 8601.', 'read', objectOf({}))],
  },
];


export const CATALOG_APPS: ReadonlyMap<string, AppDefinition> = new Map(BUILTIN_APPS.map((app) => [app.slug, app]));
export const CATALOG_TOOLS: ReadonlyMap<string, ToolDefinition> = new Map(BUILTIN_APPS.flatMap((app) => app.tools.map((t) => [t.slug, t] as const)));
