// The operations of the spec, set up once: openapi-backend loads the spec; each operation's request
// is checked by ajv (with ajv-formats and discriminators: request-validators.ts); requests are
// routed by operationId to their typed handler; schema failures become the API's one error shape
// (428 when the only thing missing is If-Match). Routing and dispatch are done here rather than by openapi-backend's handleRequest,
// which parses every request three times and rebuilds its route table on every call
// (docs/benchmarks.md).
import OpenAPIBackend, { OpenAPIValidator, type Operation } from 'openapi-backend';
import addFormats from 'ajv-formats';
import type Ajv from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { refusedTextIn } from '../domain/json-limits';
import { ApiError } from '../errors';
import { decodedSegment } from '../log';
import { textRefused } from './body';
import type { Principal, ServiceContext } from '../services/context';
import type { EventStream, Handlers, OperationId } from './handlers/types';
import type { LoadedSpec } from './spec';
import { describeValidationErrors } from '../domain/validation-errors';
import { useFastStringLength } from './string-length';
import { precompiledRequestValidators, type RequestValidators, standaloneOptions, writeRequestValidators } from './request-validators';

export type Reply = { status: number; headers?: Record<string, string> } & (
  | { body: unknown }
  | { rawBody: string; stable?: object }
  | { rawData: string; stable?: object }
  | { stream: EventStream }
  | { noContent: true }
);

/** The values a discriminated list accepts for its tag, by the list's name (`triggers`, `steps`). */
function discriminatorValuesFrom(spec: LoadedSpec): (path: string) => string[] {
  const schemas = (spec.document.components as { schemas: Record<string, { discriminator?: { mapping?: Record<string, string> } }> }).schemas;
  const keys = (name: string) => Object.keys(schemas[name]?.discriminator?.mapping ?? {});
  const byList: Record<string, string[]> = { triggers: keys('TriggerInput'), steps: keys('WorkflowStepInput') };
  return (path) => {
    // The list's name before the last `[n]` (read by hand: a regex anchored only at the end is
    // retried from every position).
    const open = path.lastIndexOf('[');
    if (open < 0 || !path.endsWith(']') || !/^\d+$/.test(path.slice(open + 1, -1))) return [];
    let start = open;
    while (start > 0 && /\w/.test(path[start - 1] as string)) start--;
    const list = path.slice(start, open);
    return Object.hasOwn(byList, list) ? (byList[list] as string[]) : [];
  };
}

function isOnlyMissingIfMatch(errors: ErrorObject[]): boolean {
  return (
    errors.length > 0 &&
    errors.every((e) => e.keyword === 'required' && e.instancePath === '/header' && (e.params as { missingProperty: string }).missingProperty === 'if-match')
  );
}

/**
 * The backend for the spec: loaded and dereferenced by openapi-backend, with a validator that
 * compiles nothing until asked. The requests' validators come from the build
 * (request-validators.ts), or are compiled by createOperations before the service listens; the
 * responses' are compiled when a test first checks a reply against the spec (only tests do).
 * openapi-backend's own would compile all of them as the service starts. Its check of the spec
 * against the OpenAPI schema (a tenth of the start) is left out: out of strict mode it could only
 * print a warning, and CI lints the spec (redocly, recommended-strict) before any build.
 * test/unit/openapi-backend.test.ts fails if the library changes what these rely on.
 *
 * `compiledBy`, when given, makes every ajv instance keep the source of what it compiles and
 * records which instance compiled each function: what the build needs to write them out.
 */
async function newBackend(spec: LoadedSpec, compiledBy?: Map<ValidateFunction, Ajv>): Promise<OpenAPIBackend> {
  useFastStringLength();
  const api = new OpenAPIBackend({ definition: structuredClone(spec.forValidation) as never, strict: false, quick: false, validate: false });
  api.validateDefinition = () => api.document;
  await api.init();
  api.validator = new OpenAPIValidator({
    definition: api.definition,
    router: api.router,
    lazyCompileValidators: true,
    ajvOpts: { allErrors: true, discriminator: true, strict: false, ...(compiledBy ? standaloneOptions : {}) } as never,
    customizeAjv: (ajv) => {
      addFormats(ajv, { mode: 'full' });
      if (compiledBy) {
        const compile = ajv.compile.bind(ajv);
        ajv.compile = ((schema: object) => {
          const validate = compile(schema);
          compiledBy.set(validate, ajv);
          return validate;
        }) as typeof ajv.compile;
      }
      return ajv;
    },
  });
  return api;
}

/**
 * One backend per loaded spec and process: the service's tests build many apps on the same spec in
 * one process, and each would otherwise compile the same validators again. It holds nothing of an
 * app's (routing and dispatch are ours), only the spec and the validators compiled from it.
 */
const backends = new WeakMap<LoadedSpec, Promise<OpenAPIBackend>>();

function backendFor(spec: LoadedSpec): Promise<OpenAPIBackend> {
  let backend = backends.get(spec);
  if (!backend) {
    backend = newBackend(spec);
    backends.set(spec, backend);
  }
  return backend;
}

const requestValidatorSets = new WeakMap<OpenAPIBackend, RequestValidators>();

/** The build's request validators for the spec, or, without them, every operation's compiled now (never in a request). */
function requestValidatorsOf(spec: LoadedSpec, api: OpenAPIBackend): RequestValidators {
  let validators = requestValidatorSets.get(api);
  if (!validators) {
    const formats = api.validator.getAjv('requestBody' as never).formats as Record<string, unknown>;
    validators = precompiledRequestValidators(spec, formats) ?? compiledRequestValidators(api);
    requestValidatorSets.set(api, validators);
  }
  return validators;
}

function compiledRequestValidators(api: OpenAPIBackend): RequestValidators {
  const compiled = new Map(
    api
      .getOperations()
      .map(({ operationId }) => [operationId as string, (api.validator.getRequestValidatorsForOperation(operationId as string) ?? []) as ValidateFunction[]]),
  );
  return (operationId) => compiled.get(operationId) ?? [];
}

/** Compiles every operation's request validators and writes them to dist/ (scripts/build.js). */
export async function buildRequestValidators(spec: LoadedSpec, file?: string): Promise<void> {
  const compiledBy = new Map<ValidateFunction, Ajv>();
  writeRequestValidators(spec, await newBackend(spec, compiledBy), compiledBy, file);
}

interface Route {
  operation: Operation;
  pattern: RegExp;
  names: string[];
}

const escapeRegExp = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The operations' paths compiled once into patterns with a capture group per path parameter,
 * ordered like openapi-backend's router orders them: literal paths first, then templates by the
 * length of their literal part. (The router itself builds its operation list and one RegExp per
 * path again on every match; compiled once, a match is a scan of ready patterns.)
 */
function compileRoutes(operations: Operation[]): Route[] {
  return operations
    .map((operation) => ({
      operation,
      names: [...operation.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string),
      pattern: new RegExp(
        `^${operation.path
          .split(/\{[^}]+\}/)
          .map(escapeRegExp)
          .join('([^/]+)')}/?$`,
      ),
      literal: operation.path.replace(/\{[^}]+\}/g, '').length,
      exact: !operation.path.includes('{'),
    }))
    .sort((a, b) => Number(b.exact) - Number(a.exact) || b.literal - a.literal);
}

export type Match = { operation: Operation; params: Record<string, string> } | { allowed: string[] };

export interface Operations {
  /** The backend, for validating replies against the spec (tests, contract hooks). */
  api: OpenAPIBackend;
  /** The operation a method and path name (HEAD names the GET), or the methods the path allows (405; OPTIONS), or null (404). */
  match(method: string, path: string): Match | null;
  /** Validates the request against the operation's schemas (ajv) and calls its handler. */
  dispatch(
    match: Extract<Match, { operation: Operation }>,
    request: { method: string; path: string; headers: Record<string, unknown>; query: Record<string, unknown>; body: unknown },
    principal: Principal,
  ): Promise<Reply>;
}

const DECIMAL_INTEGER = /^-?[0-9]+$/;

/** Integer query parameters written in decimal digits: the validator would coerce any text JavaScript reads as a number ('1e1', '0x10', ' 5'). */
function checkIntegerQuery(query: Record<string, unknown>, names: readonly string[]): void {
  for (const name of names) {
    const value = query[name];
    if (typeof value === 'string' && !DECIMAL_INTEGER.test(value)) throw new ApiError(400, `query.${name}: must be an integer written in decimal digits`);
  }
}

/**
 * The operation's compiled validators (its body's, then its parameters') applied to the request as
 * openapi-backend's validateRequest applies them, without re-parsing a request that is parsed
 * already: path parameters from our route match, the query and headers as node parsed them.
 * (validateRequest parses the URL, the query, the cookies and the path template again on every
 * call, work every request has had done already.)
 */
function requestErrors(
  validators: ValidateFunction[],
  params: Record<string, string>,
  request: { headers: Record<string, unknown>; query: Record<string, unknown>; body: unknown },
  arrayQuery: readonly string[],
): ErrorObject[] {
  // Copies: the parameters' validator coerces types in place, and handlers read values as sent.
  const query = { ...request.query };
  // A repeatable parameter given once arrives as a string (`status=failed`): it is a list of one.
  for (const name of arrayQuery) if (typeof query[name] === 'string') query[name] = [query[name]];
  const parameters: Record<string, unknown> = { path: { ...params }, query, header: { ...request.headers }, cookie: {} };
  if (request.body !== undefined) parameters.requestBody = request.body; // readJsonBody parsed it (or found none)
  const errors: ErrorObject[] = [];
  for (const validate of validators) if (!validate(parameters)) errors.push(...(validate.errors ?? []));
  return errors;
}

/** A backend that only validates (no handlers): the contract test's hooks check replies with it. */
export async function createContractValidator(spec: LoadedSpec): Promise<OpenAPIBackend> {
  return backendFor(spec);
}

export async function createOperations(spec: LoadedSpec, handlers: Handlers, ctx: ServiceContext): Promise<Operations> {
  const api = await backendFor(spec);
  const routes = compileRoutes(api.getOperations());
  const discriminatorValues = discriminatorValuesFrom(spec);
  const requestValidators = requestValidatorsOf(spec, api);
  const validatorsOf = (operation: Operation) => requestValidators(operation.operationId as string);
  // Each operation's query parameters whose schema is an array (form style, exploded: repeatable).
  const queryParametersOf = (operation: Operation, type: string) =>
    ((operation.parameters ?? []) as { in?: string; name?: string; schema?: { type?: string } }[])
      .filter((p) => p.in === 'query' && p.schema?.type === type)
      .map((p) => p.name as string);
  const arrayQueryOf = new Map(routes.map(({ operation }) => [operation.operationId as string, queryParametersOf(operation, 'array')]));
  const integerQueryOf = new Map(routes.map(({ operation }) => [operation.operationId as string, queryParametersOf(operation, 'integer')]));

  return {
    api,
    match(method, path) {
      // HEAD is GET without the body (RFC 9110 §9.3.2): node sends no body for it.
      const verb = method === 'HEAD' ? 'get' : method.toLowerCase();
      const allowed: string[] = [];
      for (const route of routes) {
        const found = route.pattern.exec(path);
        if (!found) continue;
        if (route.operation.method === verb) {
          const params: Record<string, string> = {};
          for (const [i, name] of route.names.entries()) params[name] = decodedSegment(found[i + 1] as string);
          return { operation: route.operation, params };
        }
        allowed.push(route.operation.method.toUpperCase());
        if (route.operation.method === 'get') allowed.push('HEAD');
      }
      return allowed.length ? { allowed: [...allowed, 'OPTIONS'] } : null;
    },
    async dispatch({ operation, params }, request, principal) {
      const refused = refusedTextIn(params, 'path') ?? refusedTextIn(request.query, 'query');
      if (refused) throw textRefused(refused);
      checkIntegerQuery(request.query, integerQueryOf.get(operation.operationId as string) ?? []);
      const errors = requestErrors(validatorsOf(operation), params, request, arrayQueryOf.get(operation.operationId as string) ?? []);
      if (errors.length) {
        if (isOnlyMissingIfMatch(errors)) throw new ApiError(428, 'If-Match: required; send the ETag of your last read of this document (or *)');
        throw new ApiError(400, describeValidationErrors(errors, discriminatorValues));
      }
      const handler = handlers[operation.operationId as OperationId] as (call: unknown) => Promise<Reply>;
      return handler({ ctx, principal, params, query: request.query, headers: request.headers, body: request.body });
    },
  };
}

/**
 * Checks a reply against the operation's documented responses: the status must be listed and the
 * body and headers must match. Used in tests, so drift shows before the contract test runs.
 */
export function contractViolation(api: OpenAPIBackend, operation: Operation, reply: Reply): string | null {
  const documented = Object.keys(operation.responses ?? {});
  if (!documented.includes(String(reply.status))) {
    return `status ${reply.status} is not documented for ${operation.operationId} (documented: ${documented.join(', ')})`;
  }
  if ('stream' in reply) return null; // an event stream's lines are checked by its tests
  const response = operation.responses?.[String(reply.status)] as { content?: unknown } | undefined;
  if ('noContent' in reply) {
    if (response?.content) return `status ${reply.status} of ${operation.operationId} documents a body; none was sent`;
  } else {
    if (!response?.content) return `status ${reply.status} of ${operation.operationId} documents no body; one was sent`;
    const sent = 'body' in reply ? reply.body : JSON.parse('rawBody' in reply ? reply.rawBody : `{"data":${reply.rawData}}`);
    const body = api.validateResponse(sent, operation, reply.status);
    if (body.errors?.length) return `body: ${JSON.stringify(body.errors)}`;
  }
  const headers = Object.fromEntries(Object.entries(reply.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  // Values are checked against their schemas ('any': openapi-backend's 'superset' would require every
  // documented header, even one the spec marks `required: false`, such as a list's Link); presence here.
  const headerResult = api.validateResponseHeaders(headers, operation, { statusCode: reply.status, setMatchType: 'any' as never });
  if (headerResult.errors?.length) return `headers: ${JSON.stringify(headerResult.errors)}`;
  const documentedHeaders = (operation.responses?.[String(reply.status)] as { headers?: Record<string, { required?: boolean }> } | undefined)?.headers ?? {};
  const missing = Object.entries(documentedHeaders).find(([name, header]) => header.required !== false && headers[name.toLowerCase()] === undefined);
  if (missing) return `headers: the documented header ${missing[0]} is missing`;
  return null;
}
