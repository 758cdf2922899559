// An OAuth 2.0 access token by the client credentials grant (RFC 6749 section 4.4): the client
// authenticates with HTTP Basic (section 2.3.1), the request goes through the guarded fetch (the
// outbound address rule, a deadline, a byte cap), and the answer must be a bearer token.
import { guardedFetch } from './guarded-fetch';
import { CredentialsRefused, ToolError } from '../types';

/** The token endpoint's answer is read up to this. */
const ANSWER_BYTES = 64 * 1024;
const TIMEOUT_MS = 10_000;
/** A token that says nothing of its lifetime is used for this long. */
const DEFAULT_LIFETIME_MS = 3_600_000;

export interface ClientCredentials {
  token_url: string;
  client_id: string;
  client_secret: string;
  scope?: string | null;
  audience?: string | null;
}

/** OAuth's errors that say the client's credentials (or what they may ask) are refused. */
const REFUSALS = new Set(['invalid_client', 'unauthorized_client', 'invalid_grant', 'invalid_scope', 'access_denied']);

export async function fetchAccessToken(credentials: ClientCredentials, opts: { allowPrivate: boolean }): Promise<{ accessToken: string; expiresInMs: number }> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new ToolError(`the token endpoint did not answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  const guarded = guardedFetch({ allowPrivate: opts.allowPrivate, maxBytes: ANSWER_BYTES, signal: deadline.signal });
  try {
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (credentials.scope) form.set('scope', credentials.scope);
    if (credentials.audience) form.set('audience', credentials.audience);
    // Section 2.3.1: the id and secret form-encoded, then joined for Basic.
    const basic = Buffer.from(`${encodeURIComponent(credentials.client_id)}:${encodeURIComponent(credentials.client_secret)}`).toString('base64');
    const res = await guarded.fetch(credentials.token_url, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
    });
    const body = await res.json().catch(() => null);
    return tokenOf(res.status, body as Record<string, unknown> | null);
  } catch (err) {
    if (err instanceof ToolError) throw err;
    if (deadline.signal.aborted) throw deadline.signal.reason;
    if (guarded.cut) throw new ToolError(`the token endpoint's answer is larger than ${ANSWER_BYTES} bytes`);
    throw new ToolError(`the token endpoint could not be reached: ${(err as Error).message}`);
  } finally {
    clearTimeout(timer);
    deadline.abort();
    guarded.close();
  }
}

function tokenOf(status: number, body: Record<string, unknown> | null): { accessToken: string; expiresInMs: number } {
  const error = typeof body?.error === 'string' ? body.error.slice(0, 100) : null;
  if (status !== 200 || error) {
    const said = error ? ` (${error}${typeof body?.error_description === 'string' ? `: ${body.error_description.slice(0, 300)}` : ''})` : '';
    const message = `the token endpoint refused the client credentials with ${status}${said}`;
    throw (error && REFUSALS.has(error)) || status === 401 ? new CredentialsRefused(message) : new ToolError(message);
  }
  const token = body?.access_token;
  if (typeof token !== 'string' || !token || token.length > 8192 || !/^[\x21-\x7E]+$/.test(token))
    throw new ToolError('the token endpoint answered no usable access_token');
  if (typeof body?.token_type === 'string' && body.token_type.toLowerCase() !== 'bearer')
    throw new ToolError(`the token endpoint answered a ${body.token_type.slice(0, 40)} token, not a bearer token`);
  const expiresIn = Number(body?.expires_in);
  return { accessToken: token, expiresInMs: Number.isFinite(expiresIn) && expiresIn > 0 ? Math.min(expiresIn, 86_400 * 30) * 1000 : DEFAULT_LIFETIME_MS };
}
