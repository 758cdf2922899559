// A connection's credentials (issue 44): what its calls send, and what of them may be shown. The
// secrets (a token, a header's value, a client secret) are write-only: a read shows the kind and
// the parts that are not secret, and the store keeps the whole sealed (services/connections.ts).
import type { components } from '../../generated/api';
import type { Problem } from './types';

export type Credentials = components['schemas']['ConnectionCredentials'];
export type CredentialsShown = components['schemas']['CredentialsShown'];
export type ConnectionStatus = components['schemas']['ConnectionDetail']['status'];

/** An RFC 9110 token: what a header's name may be. */
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;

/** Headers the MCP transport sets itself: a connection may not send its own. */
const TRANSPORT_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'connection',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);

/** What a read shows of `credentials`: never a secret (a signing secret's rotation: the services add it). */
export function shownOf(credentials: Credentials): CredentialsShown {
  switch (credentials.kind) {
    case 'signing_secret':
      return { kind: 'signing_secret', previous_valid_until: null };
    case 'whatsapp':
      return { kind: 'whatsapp', phone_number_id: credentials.phone_number_id };
    case 'none':
    case 'bearer':
      return { kind: credentials.kind };
    case 'headers':
      return { kind: 'headers', header_names: Object.keys(credentials.headers).sort() };
    case 'oauth2_client_credentials':
      return {
        kind: credentials.kind,
        token_url: credentials.token_url,
        client_id: credentials.client_id,
        scope: credentials.scope ?? null,
        audience: credentials.audience ?? null,
      };
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const PRINTABLE = /^[\x20-\x7E]*$/;

/**
 * Why `value` is not credentials as ConnectionCredentials describes them, or null: for input the
 * request schema did not check (the command line's standard input).
 */
export function credentialsShapeProblem(value: unknown): string | null {
  if (!isObject(value)) return 'must be an object with a kind';
  const text = (name: string, max: number, optional = false) => {
    const v = value[name];
    if (optional && (v === undefined || v === null)) return null;
    return typeof v === 'string' && v.length >= (optional ? 0 : 1) && v.length <= max && PRINTABLE.test(v)
      ? null
      : `${name}: must be printable text of at most ${max} characters`;
  };
  const only = (names: string[]) => Object.keys(value).find((k) => !names.includes(k));
  const extra = (names: string[]) => (only(names) ? `${only(names)}: is not a member of ${String(value.kind)} credentials` : null);
  switch (value.kind) {
    case 'none':
      return extra(['kind']);
    case 'bearer':
      return extra(['kind', 'token']) ?? text('token', 4096);
    case 'headers': {
      const headers = value.headers;
      if (!isObject(headers) || !Object.keys(headers).length) return 'headers: must be an object of one or more headers';
      const bad = Object.entries(headers).find(([, v]) => typeof v !== 'string' || v.length > 4096 || !PRINTABLE.test(v));
      return extra(['kind', 'headers']) ?? (bad ? `headers.${bad[0]}: must be printable text of at most 4096 characters` : null);
    }
    case 'oauth2_client_credentials':
      return (
        extra(['kind', 'token_url', 'client_id', 'client_secret', 'scope', 'audience']) ??
        text('token_url', 2000) ??
        text('client_id', 500) ??
        text('client_secret', 4096) ??
        text('scope', 1000, true) ??
        text('audience', 1000, true)
      );
    case 'signing_secret': {
      const grace = value.previous_valid_for_seconds;
      const graceProblem =
        grace === undefined || (Number.isInteger(grace) && (grace as number) >= 0 && (grace as number) <= 604_800)
          ? null
          : 'previous_valid_for_seconds: must be a whole number of seconds from 0 to 604800';
      return extra(['kind', 'secret', 'previous_valid_for_seconds']) ?? text('secret', 4096) ?? graceProblem;
    }
    case 'whatsapp': {
      const id = value.phone_number_id;
      const idProblem =
        typeof id === 'string' && id.length >= 1 && id.length <= 64 && [...id].every((c) => c >= '0' && c <= '9')
          ? null
          : 'phone_number_id: must be 1 to 64 digits';
      return (
        extra(['kind', 'phone_number_id', 'access_token', 'app_secret', 'verify_token']) ??
        idProblem ??
        text('access_token', 4096) ??
        text('app_secret', 256) ??
        text('verify_token', 256)
      );
    }
    default:
      return 'kind: must be one of none, bearer, headers, oauth2_client_credentials, signing_secret, whatsapp';
  }
}

/** The rules the schema cannot state: header names that are tokens, and none the transport sets. */
export function credentialProblems(credentials: Credentials, at: string): Problem[] {
  if (credentials.kind !== 'headers') return [];
  const problems: Problem[] = [];
  const seen = new Set<string>();
  for (const name of Object.keys(credentials.headers)) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name))
      problems.push({ path: `${at}.headers.${name}`, message: 'is not a header name (an RFC 9110 token of at most 100 characters)' });
    else if (TRANSPORT_HEADERS.has(lower))
      problems.push({ path: `${at}.headers.${name}`, message: 'is set by the transport; a connection cannot send its own' });
    else if (seen.has(lower)) problems.push({ path: `${at}.headers.${name}`, message: 'names a header already given (header names are case-insensitive)' });
    seen.add(lower);
  }
  return problems;
}
