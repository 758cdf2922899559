// The one error type that crosses from services to HTTP: a status, a message that names the JSON
// path and the rule broken, and (for some 409s) further members of the body.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  body(): Record<string, unknown> {
    return { error: this.message, ...this.extra };
  }
}

export const badRequest = (message: string) => new ApiError(400, message);
export const notFound = (message: string) => new ApiError(404, message);
export const conflict = (message: string, extra: Record<string, unknown> = {}) => new ApiError(409, message, extra);
