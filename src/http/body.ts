// Reads a request body for an operation that takes one: the 64 KiB limit first (from Content-Length
// before a byte is read, then while reading; larger for a skill's writes), then the media type,
// UTF-8 and JSON (or text, for the one operation that takes it: a SKILL.md import). Each failure is
// a 4xx that says what to send instead.
import type { Request } from 'express';
import type { Operation } from 'openapi-backend';
import { exceedsDepth, JSON_DEPTH_LIMIT, refusedTextIn, type RefusedText } from '../domain/json-limits';
import { inexactJsonIn } from '../domain/json-exact';
import { ApiError } from '../errors';
import { DATASET_REQUEST_BYTES } from '../domain/evals/dataset';
import { SKILL_REQUEST_BYTES } from '../domain/skill';
import { SKILL_IMPORT_BYTES } from '../domain/skill-markdown';

export const BODY_LIMIT_BYTES = 64 * 1024;

/** The operations whose bodies may be larger (a skill carries its files: docs/skills.md; a dataset its cases: docs/evals.md). */
const LARGER_BODIES: ReadonlyMap<string, number> = new Map([
  ['createSkill', SKILL_REQUEST_BYTES],
  ['replaceSkill', SKILL_REQUEST_BYTES],
  ['importSkill', SKILL_IMPORT_BYTES],
  ['createEvalDataset', DATASET_REQUEST_BYTES],
  ['replaceEvalDataset', DATASET_REQUEST_BYTES],
]);

/** The most bytes a body of the operation may have. */
export const bodyLimitOf = (operationId: string | undefined): number => (operationId && LARGER_BODIES.get(operationId)) || BODY_LIMIT_BYTES;

/**
 * How much more of a refused body is read and dropped before its connection is closed. A client
 * that sends a large body writes all of it before it reads the reply: closing the connection at
 * once makes its writes fail (EPIPE, or a reset), and it often loses the 413 with them. Draining a bounded amount lets it read the 413 and keep the connection, as node does for
 * any reply sent before the body was read; a body that goes on past this has its connection closed.
 */
export const DISCARD_LIMIT_BYTES = 16 * 1024 * 1024;

const tooLargeError = new ApiError(413, `body is over the ${BODY_LIMIT_BYTES}-byte limit`);

/** The 413 for this request, whose body's rest is read and dropped (up to DISCARD_LIMIT_BYTES) while the reply goes out. */
function tooLarge(req: Request, limit: number): ApiError {
  let discarded = 0;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DISCARD_LIMIT_BYTES) req.socket.destroy();
  });
  return limit === BODY_LIMIT_BYTES ? tooLargeError : new ApiError(413, `body is over the ${limit}-byte limit`);
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function readRaw(req: Request, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        reject(tooLarge(req, limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new ApiError(400, `body: could not be read (${err.message})`));
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/**
 * Whether a body is `application/json` (UTF-8): what every operation of the API takes. Another JSON
 * type says another meaning (`application/merge-patch+json` is a partial update, which a whole
 * document's PUT is not), so it is 415 too.
 */
function isJsonMediaType(contentType: string): boolean {
  const [type = '', ...params] = contentType.split(';').map((p) => p.trim().toLowerCase());
  if (type !== 'application/json') return false;
  return params.every((p) => !p.startsWith('charset=') || p === 'charset=utf-8' || p === 'charset="utf-8"');
}

/**
 * What no request may carry: U+0000, which no field needs and PostgreSQL cannot store; a lone
 * surrogate; a member named __proto__ (domain/json-limits.ts, refusedTextIn); and what JSON.parse
 * would change: a repeated member name, a number no double holds as sent (domain/json-exact.ts).
 */
export const textRefused = ({ path, rule }: RefusedText) => new ApiError(400, `${path}: ${rule}`);

const declaredBody = (operation: Operation) => operation.requestBody as { required?: boolean } | undefined;

/** Whether the operation takes a request body (only then is readJsonBody called: a GET waits for no promise). */
export function takesBody(operation: Operation): boolean {
  return declaredBody(operation) !== undefined;
}

/** The body's bytes, whatever their media type: 413 from Content-Length before a byte is read, or past `limit` while reading. */
export function readBodyBytes(req: Request, limit = BODY_LIMIT_BYTES): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge(req, limit));
  return readRaw(req, limit);
}

/** The text media types an operation takes instead of JSON (a SKILL.md import), or null when it takes JSON. */
function textMediaTypes(operation: Operation): string[] | null {
  const content = (operation.requestBody as { content?: Record<string, unknown> } | undefined)?.content ?? {};
  return 'application/json' in content ? null : Object.keys(content).filter((type) => type.startsWith('text/'));
}

/** A text body (UTF-8) of one of `types`, as a string. */
function textBody(raw: Buffer, contentType: string | undefined, types: string[]): string {
  const [type = '', ...params] = (contentType ?? '').split(';').map((p) => p.trim().toLowerCase());
  const utf8Charset = params.every((p) => !p.startsWith('charset=') || p === 'charset=utf-8' || p === 'charset="utf-8"');
  if (!types.includes(type) || !utf8Charset) throw new ApiError(415, `Content-Type: must be ${types.join(' or ')} (UTF-8), got '${contentType ?? 'none'}'`);
  try {
    return utf8.decode(raw);
  } catch {
    throw new ApiError(400, 'body: is not valid UTF-8');
  }
}

/**
 * The parsed JSON body of a request to an operation that takes one (the text of one that takes
 * text: a SKILL.md import), or undefined when an optional one was not sent.
 */
export async function readJsonBody(req: Request, operation: Operation): Promise<unknown> {
  const limit = bodyLimitOf(operation.operationId);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(req, limit);
  const encoding = req.headers['content-encoding'];
  if (encoding && encoding.toLowerCase() !== 'identity') {
    throw new ApiError(415, `Content-Encoding: '${encoding}' is not supported; send the body uncompressed`);
  }
  const raw = await readRaw(req, limit);
  const text = textMediaTypes(operation);
  if (raw.length === 0) {
    if (declaredBody(operation)?.required)
      throw new ApiError(
        400,
        `body: required; send ${text ? `the text with Content-Type: ${text.join(' or ')}` : 'a JSON document with Content-Type: application/json'}`,
      );
    return undefined;
  }
  const contentType = req.headers['content-type'];
  if (text) return textBody(raw, contentType, text);
  if (!contentType || !isJsonMediaType(contentType)) {
    throw new ApiError(415, `Content-Type: must be application/json (UTF-8), got '${contentType ?? 'none'}'`);
  }
  const parsed = parseBodyText(raw, 'body');
  if ('refused' in parsed) throw new ApiError(400, parsed.refused);
  return withinJsonLimits(parsed.value);
}

/**
 * Bytes read as UTF-8 JSON, exactly: the value, or why not (`base: rule`), refusing what JSON.parse
 * would change (a repeated member name, a number no double holds: domain/json-exact.ts).
 */
export function parseBodyText(raw: Buffer, base: string): { value: unknown } | { refused: string } {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    return { refused: `${base}: is not valid UTF-8` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { refused: `${base}: malformed JSON (${(err as Error).message})` };
  }
  const inexact = inexactJsonIn(text, base);
  return inexact ? { refused: `${inexact.path}: ${inexact.rule}` } : { value };
}

/** A body that arrived parsed (an MCP tool's `body`) held to the limits a body sent as text is: its size as JSON, its depth, no NUL, no member named __proto__. */
export function checkParsedBody(body: unknown, limit = BODY_LIMIT_BYTES): unknown {
  if (exceedsDepth(body, JSON_DEPTH_LIMIT)) throw depthError;
  if (Buffer.byteLength(JSON.stringify(body)) > limit)
    throw limit === BODY_LIMIT_BYTES ? tooLargeError : new ApiError(413, `body is over the ${limit}-byte limit`);
  return withoutRefusedText(body);
}

const depthError = new ApiError(400, `body: nested deeper than ${JSON_DEPTH_LIMIT} levels`);

function withinJsonLimits(body: unknown): unknown {
  if (exceedsDepth(body, JSON_DEPTH_LIMIT)) throw depthError;
  return withoutRefusedText(body);
}

function withoutRefusedText(body: unknown): unknown {
  const refused = refusedTextIn(body, 'body');
  if (refused) throw textRefused(refused);
  return body;
}
