// Handler types derived from generated/api.ts: one handler per operationId, its path parameters
// and body typed from the spec, and its success reply typed by the statuses the spec lists. An
// operation without a handler, or a reply the spec does not describe, fails the type check.
import type { operations } from '../../../generated/api';
import type { Principal, ServiceContext } from '../../services/context';
import type { Serialized } from '../../store/port';

/**
 * Operations served outside /api/build by a handler of their own (http/webhooks.ts): no bearer
 * token, and a body of any media type read as bytes.
 */
export type WebhookOperationId = 'deliverWebhook' | 'deliverWebhookPut' | 'deliverAppEvent' | 'verifyEventReceiver';
/** The operations under /api/build, each with its handler in the map below. */
export type OperationId = Exclude<keyof operations, WebhookOperationId>;

type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type Op<K extends OperationId> = operations[K];

export type RequestBodyOf<K extends OperationId> =
  Op<K> extends { requestBody: infer R } ? JsonOf<R> : Op<K> extends { requestBody?: infer R } ? JsonOf<NonNullable<R>> | undefined : undefined;

export type PathParamsOf<K extends OperationId> = Op<K>['parameters'] extends { path: infer P } ? P : Record<string, never>;
export type QueryOf<K extends OperationId> = Op<K>['parameters'] extends { query?: infer Q } ? NonNullable<Q> : Record<string, never>;

type SuccessStatus = 200 | 201 | 202 | 204;
type DataOf<B> = B extends { data: infer D } ? D : never;
/**
 * A success reply: `body`; the whole body's JSON text (`rawBody`, sent as is); or `data`'s JSON text
 * as stored (`rawData`), which is sent inside `{"data":…}` without being parsed and serialised again. `stable`: an object that lives as long as
 * `rawData` or `rawBody` stays what it is (a stored version of a document, a built list, a held page); the encoded reply is kept with it.
 * A response the spec gives no content (204) is `noContent`.
 */
export type ReplyOf<K extends OperationId> = {
  [S in keyof Op<K>['responses'] & SuccessStatus]:
    | { status: S; body: JsonOf<Op<K>['responses'][S]>; headers?: Record<string, string> }
    | { status: S; rawData: Serialized<DataOf<JsonOf<Op<K>['responses'][S]>>>; stable?: object; headers?: Record<string, string> }
    | { status: S; rawBody: Serialized<JsonOf<Op<K>['responses'][S]>>; stable?: object; headers?: Record<string, string> }
    | (Op<K>['responses'][S] extends { content: { 'text/event-stream': unknown } } ? { status: S; stream: EventStream } : never)
    | (Op<K>['responses'][S] extends { content?: never } ? { status: S; noContent: true; headers?: Record<string, string> } : never);
}[keyof Op<K>['responses'] & SuccessStatus];

/**
 * A `text/event-stream` reply: called with the response once the request is accepted; it writes
 * the stream and ends it (or the client leaves, which `closed` tells).
 */
export type EventStream = (out: { write(chunk: string): void; end(): void; closed: Promise<void> }) => void;

export interface Call<K extends OperationId> {
  ctx: ServiceContext;
  principal: Principal;
  params: PathParamsOf<K>;
  query: QueryOf<K>;
  headers: Record<string, string | undefined>;
  body: RequestBodyOf<K>;
}

export type Handler<K extends OperationId> = (call: Call<K>) => Promise<ReplyOf<K>>;
export type Handlers = { [K in OperationId]: Handler<K> };

/**
 * A result's JSON with its `document` member given as JSON text (the stored document, or the one a
 * validation serialised to measure it) spliced in as is; the other members are serialised. (Replies
 * carried the whole document through JSON.stringify a second time.)
 */
export function withDocumentJson<R>(documentJson: string, rest: Omit<R, 'document'>): Serialized<R> {
  const tail = JSON.stringify(rest);
  return (tail === '{}' ? `{"document":${documentJson}}` : `{"document":${documentJson},${tail.slice(1)}`) as Serialized<R>;
}
