// The MCP tools, generated from openapi.yaml: one per operation under /api/build that an assistant
// can call (NOT_TOOLS names the others and why), so a new operation becomes a tool with no code
// here. A tool's name is its operationId in snake_case; its arguments are the operation's path and
// query parameters by name, the request body under `body`, If-Match as `if_match` and
// Idempotency-Key as `idempotency_key`; its output is the success reply's `data` (docs/mcp.md).
import type { LoadedSpec } from '../http/spec';
import { SchemaConverter, type JsonSchema } from './json-schema';

/** Operations that are not tools, and why (a test checks every operation is a tool or listed here). */
export const NOT_TOOLS: Readonly<Record<string, string>> = {
  streamAgentRunEvents: 'an event stream (Server-Sent Events); get_agent_run with wait_seconds answers when the run ends',
  streamWorkflowRunEvents: 'an event stream (Server-Sent Events); get_workflow_run with wait_seconds answers when the run ends',
  streamEvalEvents: 'an event stream (Server-Sent Events); get_eval answers where the eval stands',
  deliverWebhook: "a trigger's webhook receiver (outside /api/build, authorized by its URL's secret)",
  deliverWebhookPut: "a trigger's webhook receiver (outside /api/build, authorized by its URL's secret)",
  deliverAppEvent: "a connection's receiver of an app's signed events (outside /api/build, authorized by the app's signature)",
  verifyEventReceiver: "Meta's subscription check of a WhatsApp connection's receiver (outside /api/build, authorized by its verify token)",
};

/** The run reads that also take `wait_seconds` (answer when the run leaves queued/running). */
export const WAITING_READS: Readonly<Record<string, 'agent' | 'workflow'>> = { getAgentRun: 'agent', getWorkflowRun: 'workflow' };

/** The longest a run read waits (`wait_seconds`). */
export const MAX_WAIT_SECONDS = 60;

/** The header parameters a tool takes, by the argument that carries each. */
const HEADER_ARGUMENTS: Readonly<Record<string, string>> = { 'if-match': 'if_match', 'idempotency-key': 'idempotency_key' };

export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface Tool {
  name: string;
  operationId: string;
  method: string;
  /** The path template, e.g. /api/build/agents/{ref}. */
  path: string;
  description: string;
  inputSchema: JsonSchema;
  /** The schema of structuredContent (absent when the success reply has no body). */
  outputSchema?: JsonSchema;
  /** Whether structuredContent is the reply's `data` (an object) or the whole body (a list page: `data` is an array). */
  outputIsData: boolean;
  annotations: ToolAnnotations;
  pathParams: string[];
  queryParams: string[];
  /** Header name (lower case) by argument name. */
  headerArgs: Record<string, string>;
  /** Run kind when the tool is a run read that takes `wait_seconds`. */
  waitsFor?: 'agent' | 'workflow';
  /** Whether the operation takes a request body (the `body` argument). */
  takesBody: boolean;
  /** The schema of the arguments other than `body` (which the operation's own validation checks, with its messages). */
  argumentsSchema: JsonSchema;
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  description?: string;
  schema?: unknown;
}

interface OperationObject {
  operationId: string;
  summary?: string;
  description?: string;
  parameters?: unknown[];
  requestBody?: { required?: boolean; description?: string; content?: Record<string, { schema?: unknown }> };
  responses: Record<string, unknown>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const API_ROOT = '/api/build';

export const toolName = (operationId: string) => operationId.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Every tool of the spec, in the spec's order. Throws when the spec names something it does not define. */
export function toolsOf(spec: LoadedSpec): Tool[] {
  const doc = spec.document as { paths: Record<string, Record<string, unknown>>; components: Record<string, Record<string, unknown>> };
  const components = doc.components;
  const converter = new SchemaConverter(components.schemas ?? {});
  const resolve = <T>(node: unknown, section: string): T => {
    const ref = (node as { $ref?: string }).$ref;
    if (typeof ref !== 'string') return node as T;
    const prefix = `#/components/${section}/`;
    const found = ref.startsWith(prefix) ? components[section]?.[ref.slice(prefix.length)] : undefined;
    if (found === undefined) throw new Error(`openapi.yaml: unresolvable reference ${ref}`);
    return found as T;
  };

  const tools: Tool[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!path.startsWith(API_ROOT)) continue;
    const shared = ((item.parameters as unknown[]) ?? []).map((p) => resolve<Parameter>(p, 'parameters'));
    for (const method of METHODS) {
      const operation = item[method] as OperationObject | undefined;
      if (!operation || Object.hasOwn(NOT_TOOLS, operation.operationId)) continue;
      const own = (operation.parameters ?? []).map((p) => resolve<Parameter>(p, 'parameters'));
      const parameters = [...shared.filter((p) => !own.some((o) => o.name === p.name && o.in === p.in)), ...own];
      tools.push(toolOf(path, method, operation, parameters, converter, resolve));
    }
  }
  return tools;
}

function toolOf(
  path: string,
  method: string,
  operation: OperationObject,
  parameters: Parameter[],
  converter: SchemaConverter,
  resolve: <T>(node: unknown, section: string) => T,
): Tool {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const headerArgs: Record<string, string> = {};
  const described = (schema: unknown, description: string | undefined) => (description ? { ...(schema as object), description } : schema);
  for (const p of parameters) {
    let argument = p.name;
    if (p.in === 'header') {
      const header = p.name.toLowerCase();
      const mapped = HEADER_ARGUMENTS[header];
      if (!mapped)
        throw new Error(`openapi.yaml: ${operation.operationId} takes header ${p.name}, which no tool argument carries (mcp/tools.ts HEADER_ARGUMENTS)`);
      argument = mapped;
      headerArgs[argument] = header;
    } else if (p.in === 'cookie') continue;
    properties[argument] = described(p.schema ?? { type: 'string' }, p.description);
    if (p.required) required.push(argument);
  }
  // A stamp is quoted for the caller (mcp/calls.ts), so if_match takes it bare too: no pattern here.
  if (properties.if_match)
    properties.if_match = {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description:
        "The document's current `updated_at` (from its last read or write), quoted or not, or `*`. Missing: 428. Not the current stamp: 409 with the current document.",
    };
  // A body of text (a SKILL.md import) is the argument's string.
  const content = operation.requestBody?.content;
  const body = content?.['application/json']?.schema ?? content?.['text/markdown']?.schema;
  if (body !== undefined) {
    properties.body = described(body, operation.requestBody?.description ?? 'The request body (JSON), as the REST operation takes it.');
    if (operation.requestBody?.required) required.push('body');
  }
  const waitsFor = WAITING_READS[operation.operationId];
  if (waitsFor) {
    properties.wait_seconds = {
      type: 'integer',
      minimum: 0,
      maximum: MAX_WAIT_SECONDS,
      default: 0,
      description: `Wait up to this many seconds for the run to leave queued and running (0 to ${MAX_WAIT_SECONDS}): the answer comes when it does or when the time passes, so there is no need to poll.`,
    };
  }
  const input = converter.standalone({ type: 'object', additionalProperties: false, properties, ...(required.length ? { required } : {}) });
  const { body: _body, ...others } = properties;
  const argumentsSchema = converter.standalone({
    type: 'object',
    properties: others,
    ...(required.filter((r) => r !== 'body').length ? { required: required.filter((r) => r !== 'body') } : {}),
  });
  const output = outputOf(operation, converter, resolve);
  const readOnly = method === 'get' || operation.operationId.startsWith('validate');
  return {
    name: toolName(operation.operationId),
    operationId: operation.operationId,
    method: method.toUpperCase(),
    path,
    description: [operation.summary, operation.description?.trim()].filter(Boolean).join('. '),
    inputSchema: input,
    ...(output ? { outputSchema: output.schema } : {}),
    outputIsData: output?.isData ?? false,
    annotations: {
      title: operation.summary ?? operation.operationId,
      readOnlyHint: readOnly,
      destructiveHint: method === 'delete',
      // A PUT to a named document (a replace) or a DELETE: repeated, it changes nothing more. A PUT
      // to a collection is a create (`my-agent`, then `my-agent-2`): not idempotent.
      idempotentHint: readOnly || method === 'delete' || (method === 'put' && path.includes('{')),
      openWorldHint: false,
    },
    pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
    queryParams: parameters.filter((p) => p.in === 'query').map((p) => p.name),
    headerArgs,
    ...(waitsFor ? { waitsFor } : {}),
    takesBody: body !== undefined,
    argumentsSchema,
  };
}

/**
 * The schema of a tool's structuredContent: the success reply's `data` when it is an object, else
 * the whole body (a list: `data` is an array, and MCP's structured content is an object; the body
 * also carries `next_cursor`; a delete's `data` is null). None when the success reply has no object body.
 */
function outputOf(
  operation: OperationObject,
  converter: SchemaConverter,
  resolve: <T>(node: unknown, section: string) => T,
): { schema: JsonSchema; isData: boolean } | null {
  const status = Object.keys(operation.responses).find((s) => /^2\d\d$/.test(s));
  if (!status) return null;
  const response = resolve<{ content?: Record<string, { schema?: unknown }> }>(operation.responses[status], 'responses');
  const bodySchema = response.content?.['application/json']?.schema;
  if (bodySchema === undefined) return null;
  const whole = resolve<Record<string, unknown> & { properties?: Record<string, unknown> }>(bodySchema, 'schemas');
  const data = whole.properties?.data;
  const dataSchema = data === undefined ? undefined : resolve<Record<string, unknown>>(data, 'schemas');
  if (dataSchema && isObjectSchema(dataSchema)) {
    // The component's own members at the root (MCP requires `type: object` there), its references in $defs.
    return { schema: { ...converter.standalone(dataSchema), type: 'object' }, isData: true };
  }
  if (!isObjectSchema(whole)) return null;
  return { schema: { ...converter.standalone(whole), type: 'object' }, isData: false };
}

/** Whether a schema only admits objects (OpenAPI 3.0 writes null as a nullable object whose one value is null). */
const isObjectSchema = (schema: Record<string, unknown>) =>
  (schema.type === 'object' || ['oneOf', 'anyOf', 'allOf'].some((k) => k in schema)) && !('enum' in schema) && schema.nullable !== true;
