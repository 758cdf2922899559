// An operation's reply to a routed request, whoever carries it (the REST layer, the MCP tools): the
// request validated and handled (operations.dispatch), or, for a write repeated with its
// Idempotency-Key, the reply kept for the first one (services/idempotency.ts).
import type { Operation } from 'openapi-backend';
import type { Principal, ServiceContext } from '../services/context';
import { fingerprintOf, idempotently, IDEMPOTENT_OPERATIONS } from '../services/idempotency';
import { replayVisibility } from '../services/replay-visibility';
import type { Operations, Reply } from './openapi';

export interface RoutedRequest {
  method: string;
  /** The request's path, without its query. */
  path: string;
  headers: Record<string, unknown>;
  query: Record<string, unknown>;
  /** The parsed body (undefined: none). */
  body: unknown;
}

/** A key the spec accepts (1 to 255 characters); others are left to the request's validation (400). */
const isUsableKey = (key: string) => key.length >= 1 && key.length <= 255;

export async function replyTo(
  operations: Operations,
  ctx: ServiceContext,
  route: { operation: Operation; params: Record<string, string> },
  request: RoutedRequest,
  principal: Principal,
): Promise<Reply> {
  const operationId = route.operation.operationId as string;
  const dispatch = () => operations.dispatch(route, request, principal);
  const key = request.headers['idempotency-key'];
  if (typeof key !== 'string' || !isUsableKey(key) || !IDEMPOTENT_OPERATIONS.has(operationId)) return dispatch();
  const fingerprint = fingerprintOf(request.method, request.path, request.query, request.body);
  const kept = await idempotently(
    ctx,
    principal,
    operationId,
    key,
    fingerprint,
    async () => {
      const handled = await dispatch();
      if ('stream' in handled || 'noContent' in handled) throw new Error('only a JSON reply can be replayed');
      return { status: handled.status, headers: handled.headers ?? {}, body: replyBytes(handled).toString('utf8') };
    },
    replayVisibility(ctx, principal, operationId, route.params),
  );
  return { status: kept.status, headers: kept.headers, rawBody: kept.body };
}

/** Encoded replies of stored versions and held pages (see Reply's `stable`): a read of a document sends the same bytes until it changes. */
const encodedReplies = new WeakMap<object, Buffer>();

/** A JSON reply's bytes. */
export function replyBytes(reply: Exclude<Reply, { stream: unknown } | { noContent: true }>): Buffer {
  if ('body' in reply) return Buffer.from(JSON.stringify(reply.body));
  const encode = () => Buffer.from('rawBody' in reply ? reply.rawBody : `{"data":${reply.rawData}}`);
  if (!reply.stable) return encode();
  let bytes = encodedReplies.get(reply.stable);
  if (!bytes) encodedReplies.set(reply.stable, (bytes = encode()));
  return bytes;
}
