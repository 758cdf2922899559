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

/** What a read shows of `credentials`: never a secret. */
export function shownOf(credentials: Credentials): CredentialsShown {
  switch (credentials.kind) {
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
