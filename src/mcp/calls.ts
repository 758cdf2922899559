// A tool call carried out as the REST operation it was generated from: its arguments become the
// request's path, query, headers and body; the request is validated and handled by the same code
// as a REST request (http/calls.ts: the spec's validators, the handlers, the services, idempotency);
// the reply becomes the tool's result. A refusal is a tool error that carries the status and the
// API's `{ error }` body, as the REST reply would (a 409's `current` included).
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { describeValidationErrors } from '../domain/validation-errors';
import { ApiError } from '../errors';
import type { Logger } from '../log';
import { bodyLimitOf, checkParsedBody } from '../http/body';
import { replyBytes, replyTo } from '../http/calls';
import type { Operations, Reply } from '../http/openapi';
import type { Principal, ServiceContext } from '../services/context';
import { quotaRefusal } from '../services/rate-limits';
import { waitWhileActive } from '../services/run-waits';
import { inSpan } from '../tracing';
import type { Tool } from './tools';

export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** The headers of a reply a caller may need next (an ETag is the next write's if_match). */
const PASSED_HEADERS = ['ETag', 'Location', 'Link'];

export function createToolCalls(operations: Operations, ctx: ServiceContext, logger: Logger) {
  const checkArguments = argumentCheckers();
  return (tool: Tool, args: Record<string, unknown>, principal: Principal, signal?: AbortSignal): Promise<ToolResult> =>
    inSpan(tool.operationId, { 'mcp.tool.name': tool.name }, () => call(tool, args, principal, signal));

  async function call(tool: Tool, args: Record<string, unknown>, principal: Principal, signal?: AbortSignal): Promise<ToolResult> {
    try {
      // A tool call is a request: it counts against the caller's quotas as its REST call would.
      const admission = await ctx.rateLimits.admit(principal, tool.operationId);
      if (!admission.admitted) throw quotaRefusal(admission);
      checkArguments(tool, args);
      const request = requestOf(tool, args);
      const route = operations.match(tool.method, request.path);
      if (!route || !('operation' in route)) throw new ApiError(400, `${tool.pathParams.join(', ')}: not a usable path (${request.path})`);
      if (tool.waitsFor) await waitWhileActive(ctx, principal, route.params.runId as string, tool.waitsFor, waitSeconds(args.wait_seconds), signal);
      return resultOf(tool, await replyTo(operations, ctx, route, request, principal));
    } catch (err) {
      if (err instanceof ApiError) return errorResult(err.status, err.body(), err.headers);
      logger.error({ err, tool: tool.name }, 'unexpected failure in an MCP tool call');
      return errorResult(500, { error: 'internal error; the service logged it' }, {});
    }
  }
}

/**
 * The arguments held to the types the tool advertises (its inputSchema, `body` aside: the
 * operation's own validation checks it, with the messages a REST caller gets). Unknown arguments
 * are refused, not ignored.
 */
function argumentCheckers() {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  // Compiled on a tool's first call, as the operations' validators are (http/openapi.ts).
  const validators = new Map<string, ValidateFunction>();
  const validatorOf = (tool: Tool) => {
    let validate = validators.get(tool.name);
    if (!validate) {
      validate = ajv.compile(tool.argumentsSchema);
      validators.set(tool.name, validate);
    }
    return validate;
  };
  return (tool: Tool, args: Record<string, unknown>) => {
    const known = [
      ...tool.pathParams,
      ...tool.queryParams,
      ...Object.keys(tool.headerArgs),
      ...(tool.takesBody ? ['body'] : []),
      ...(tool.waitsFor ? ['wait_seconds'] : []),
    ];
    for (const name of Object.keys(args)) {
      if (!known.includes(name)) throw new ApiError(400, `${name}: unknown argument; ${tool.name} takes ${known.join(', ') || 'no arguments'}`);
    }
    const { body: _body, ...others } = args;
    const validate = validatorOf(tool);
    if (!validate(others))
      throw new ApiError(
        400,
        describeValidationErrors(validate.errors ?? [], () => []),
      );
  };
}

/** The REST request a tool's (checked) arguments make. */
function requestOf(tool: Tool, args: Record<string, unknown>) {
  let path = tool.path;
  for (const name of tool.pathParams) {
    path = path.replace(`{${name}}`, encodeURIComponent(String(args[name])));
  }
  // Query values as a REST request carries them: text, and a repeated parameter as a list of texts.
  const query: Record<string, unknown> = {};
  for (const name of tool.queryParams) {
    const value = args[name];
    if (value !== undefined) query[name] = Array.isArray(value) ? value.map(queryText) : queryText(value);
  }
  const headers: Record<string, string> = {};
  for (const [argument, header] of Object.entries(tool.headerArgs)) {
    const value = args[argument];
    if (typeof value === 'string') headers[header] = header === 'if-match' ? quotedTag(value) : value;
  }
  const body = args.body === undefined ? undefined : checkParsedBody(args.body, bodyLimitOf(tool.operationId));
  return { method: tool.method, path, headers, query, body };
}

const queryText = (value: unknown) => (typeof value === 'object' ? JSON.stringify(value) : String(value));

/** A stamp as the entity tag If-Match takes: `*` and quoted tags as given, a bare stamp quoted. */
const quotedTag = (value: string) => (value === '*' || value.trimStart().startsWith('"') ? value : `"${value}"`);

/** The checked `wait_seconds` (an integer from 0 to MAX_WAIT_SECONDS: the tool's schema), 0 when absent. */
const waitSeconds = (value: unknown): number => (typeof value === 'number' ? value : 0);

function resultOf(tool: Tool, reply: Reply): ToolResult {
  if ('stream' in reply) throw new Error(`${tool.operationId} answered with an event stream, which no tool carries`);
  if ('noContent' in reply) return { content: [{ type: 'text', text: `${reply.status}: done (no content)` }] };
  const body = JSON.parse(replyBytes(reply).toString('utf8')) as Record<string, unknown> | null;
  const shown = tool.outputIsData ? body?.data : body;
  const content: ToolResult['content'] = [];
  // A run's transcript can carry third parties' instructions: its warning comes first.
  const warning = (shown as { warning?: unknown } | null)?.warning;
  if (typeof warning === 'string') content.push({ type: 'text', text: `Warning: ${warning}` });
  content.push({ type: 'text', text: JSON.stringify(shown) });
  const headers = passedHeaders(reply.headers ?? {});
  if (headers) content.push({ type: 'text', text: headers });
  return tool.outputSchema ? { content, structuredContent: shown as Record<string, unknown> } : { content };
}

function errorResult(status: number, body: Record<string, unknown>, headers: Record<string, string>): ToolResult {
  const content: ToolResult['content'] = [{ type: 'text', text: `${status}: ${JSON.stringify(body)}` }];
  const passed = passedHeaders(headers, ['Retry-After']);
  if (passed) content.push({ type: 'text', text: passed });
  return { isError: true, content };
}

function passedHeaders(headers: Record<string, string>, names = PASSED_HEADERS): string | null {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const lines = names.filter((name) => lower[name.toLowerCase()] !== undefined).map((name) => `${name}: ${lower[name.toLowerCase()]}`);
  return lines.length ? lines.join('\n') : null;
}
