// openapi-backend, set up once: ajv with ajv-formats and discriminators, every operation of the
// spec routed by operationId to its typed handler, and schema failures turned into the API's one
// error shape (428 when the only thing missing is If-Match).
import OpenAPIBackend, { type Context, type Operation } from 'openapi-backend';
import addFormats from 'ajv-formats';
import type { ErrorObject } from 'ajv';
import { ApiError } from '../errors';
import type { ServiceContext } from '../services/context';
import type { Handlers, OperationId } from './handlers/types';
import type { LoadedSpec } from './spec';
import { describeValidationErrors } from './validation-errors';

export type Reply = { status: number; body: unknown; headers?: Record<string, string> };

/** The values a discriminated list accepts for its tag, by the list's name (`triggers`, `steps`). */
function discriminatorValuesFrom(spec: LoadedSpec): (path: string) => string[] {
  const schemas = (spec.document.components as { schemas: Record<string, { discriminator?: { mapping?: Record<string, string> } }> }).schemas;
  const keys = (name: string) => Object.keys(schemas[name]?.discriminator?.mapping ?? {});
  const byList: Record<string, string[]> = { triggers: keys('TriggerInput'), steps: keys('WorkflowStepInput') };
  return (path) => {
    const list = /\.?(\w+)\[\d+\]$/.exec(path)?.[1];
    return (list && byList[list]) || [];
  };
}

function isOnlyMissingIfMatch(errors: ErrorObject[]): boolean {
  return errors.length > 0 && errors.every((e) => e.keyword === 'required' && e.instancePath === '/header' && (e.params as { missingProperty: string }).missingProperty === 'if-match');
}

function newBackend(spec: LoadedSpec, strict: boolean): OpenAPIBackend {
  return new OpenAPIBackend({
    definition: structuredClone(spec.forValidation) as never,
    strict,
    quick: false,
    validate: true,
    ajvOpts: { allErrors: true, discriminator: true, strict: false } as never,
    customizeAjv: (ajv) => {
      addFormats(ajv, { mode: 'full' });
      return ajv;
    },
  });
}

interface RouterInternals {
  getOperations(): Operation[];
  matchOperation(req: { method: string; path: string }, strict?: boolean): Operation | undefined;
  normalizeRequest(req: { method: string; path: string }): { method: string; path: string };
  normalizePath(path: string): string;
  isUnderApiRoot(path: string): boolean;
}

const escapeRegExp = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * openapi-backend's router rebuilds its operation list (lodash chains, one new RegExp per path) on
 * every match, which a profile showed as the largest cost of a request. The definition never changes
 * after init, so the list and the patterns are built once here; matching keeps the router's rules:
 * exact paths first, then templates by specificity, 404 when no path matches, 405 when no method does.
 */
function compileRouting(api: OpenAPIBackend): void {
  const router = (api as unknown as { router: RouterInternals }).router;
  const operations = router.getOperations();
  const routes = operations
    .map((op) => ({
      op,
      exact: !op.path.includes('{'),
      pattern: new RegExp(`^${op.path.replace(/\{[^}]+\}/g, '\0').split('\0').map(escapeRegExp).join('[^/]+')}$`),
      specificity: op.path.replace(/\{.*?\}/g, '').length,
    }))
    .sort((a, b) => Number(b.exact) - Number(a.exact) || b.specificity - a.specificity);
  router.getOperations = () => operations;
  router.matchOperation = (req, strict) => {
    const { method, path } = router.normalizeRequest(req);
    let pathMatched = false;
    if (router.isUnderApiRoot(path)) {
      const relative = router.normalizePath(path);
      for (const route of routes) {
        if (route.exact ? route.op.path !== relative : !route.pattern.test(relative)) continue;
        pathMatched = true;
        if (route.op.method === method) return route.op;
      }
    }
    if (!strict) return undefined;
    throw new Error(pathMatched ? '405-methodNotAllowed: this method is not registered for the route' : '404-notFound: no route matches request');
  };
}

/** A backend that only validates (no handlers): the contract test's hooks check replies with it. */
export async function createContractValidator(spec: LoadedSpec): Promise<OpenAPIBackend> {
  const api = newBackend(spec, false);
  await api.init();
  compileRouting(api);
  return api;
}

export async function createOpenApi(spec: LoadedSpec, handlers: Handlers, ctx: ServiceContext): Promise<OpenAPIBackend> {
  const api = newBackend(spec, true);
  const discriminatorValues = discriminatorValuesFrom(spec);

  // The token was verified before the body was read (auth/bearer.ts); the scheme's handler only
  // confirms that a principal came with the request, so a route can never skip authentication.
  api.registerSecurityHandler('bearerAuth', (_c: Context, principal: unknown) => principal !== undefined);
  api.register({
    unauthorizedHandler: () => {
      throw new ApiError(401, 'missing bearer token: send Authorization: Bearer <token>');
    },
    validationFail: (c: Context) => {
      const errors = (c.validation.errors ?? []) as ErrorObject[];
      if (isOnlyMissingIfMatch(errors)) {
        throw new ApiError(428, 'If-Match: required; send the ETag of your last read of this document (or *)');
      }
      throw new ApiError(400, describeValidationErrors(errors, discriminatorValues));
    },
    notFound: () => {
      throw new ApiError(404, 'no such operation');
    },
    methodNotAllowed: () => {
      throw new ApiError(405, 'method not allowed');
    },
  });
  for (const operationId of Object.keys(handlers) as OperationId[]) {
    const handler = handlers[operationId] as (call: unknown) => Promise<Reply>;
    api.register(operationId, (c: Context, principal: unknown) =>
      handler({
        ctx,
        principal,
        params: c.request.params,
        query: c.request.query,
        headers: c.request.headers,
        body: c.request.requestBody,
      }),
    );
  }
  await api.init();
  compileRouting(api);
  return api;
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
  const body = api.validateResponse(reply.body, operation, reply.status);
  if (body.errors?.length) return `body: ${JSON.stringify(body.errors)}`;
  const headers = Object.fromEntries(Object.entries(reply.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const headerResult = api.validateResponseHeaders(headers, operation, { statusCode: reply.status, setMatchType: 'superset' as never });
  if (headerResult.errors?.length) return `headers: ${JSON.stringify(headerResult.errors)}`;
  return null;
}
