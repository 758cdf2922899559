// The one error type that crosses from services to HTTP: a status, a message that names the JSON
// path and the rule broken, and (for some 409s) further members of the body.

export class ApiError extends Error {
  readonly status: number;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    // These are answers, not bugs: no stack trace is captured, as none is ever shown and capturing
    // one is work on every refusal, the unauthenticated ones included (docs/benchmarks.md).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.status = status;
    this.extra = extra;
    this.headers = headers;
  }

  private bytes?: Buffer;

  body(): Record<string, unknown> {
    return { error: this.message, ...this.extra };
  }

  /** The body as JSON bytes, encoded once (refusals built once, such as a missing token's, are sent many times). */
  encoded(): Buffer {
    return (this.bytes ??= Buffer.from(JSON.stringify(this.body())));
  }
}

export const badRequest = (message: string) => new ApiError(400, message);
export const notFound = (message: string) => new ApiError(404, message);
export const conflict = (message: string, extra: Record<string, unknown> = {}) => new ApiError(409, message, extra);
