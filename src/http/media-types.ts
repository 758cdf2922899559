// Content negotiation by what openapi.yaml says each operation answers with: a request whose Accept
// admits none of its success replies' media types is 406 (RFC 9110 §12.5.1), before anything else
// is done for it. (Which media types a body may have is body.ts's: application/json alone.)
import type { Request } from 'express';
import { ApiError } from '../errors';
import type { LoadedSpec } from './spec';

type Responses = Record<string, { $ref?: string; content?: Record<string, unknown> }>;

/** The media types of each operation's success replies, by operationId, read from the spec once. */
export function producedMediaTypes(spec: LoadedSpec): Map<string, string[]> {
  const document = spec.document as {
    paths: Record<string, Record<string, { operationId?: string; responses?: Responses }>>;
    components: { responses: Responses };
  };
  const resolve = (r: Responses[string]) => (r.$ref ? (document.components.responses[r.$ref.split('/').pop() as string] ?? {}) : r);
  const produced = new Map<string, string[]>();
  for (const methods of Object.values(document.paths)) {
    for (const operation of Object.values(methods)) {
      if (!operation.operationId) continue;
      const types = new Set<string>();
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (status.startsWith('2')) for (const type of Object.keys(resolve(response).content ?? {})) types.add(type);
      }
      produced.set(operation.operationId, types.size ? [...types] : ['application/json']);
    }
  }
  return produced;
}

/** Accept values every JSON operation satisfies, answered without parsing the header. */
const ANYTHING_JSON = new Set(['*/*', 'application/json', 'application/*']);

/** The 406 for a request that accepts none of `types`, or null. */
export function notAcceptable(req: Request, types: string[]): ApiError | null {
  const accept = req.headers.accept;
  if (accept === undefined || ANYTHING_JSON.has(accept) || req.accepts(types)) return null;
  return new ApiError(406, `Accept: this operation answers with ${types.join(' or ')}, which '${accept.slice(0, 200)}' does not accept`);
}
