// What a call through a connection sends: its credentials, opened from the secret box only for the
// call, never kept in memory past it, never logged. An OAuth 2.0 client-credentials connection
// sends an access token fetched from its token endpoint (RFC 6749 section 4.4), kept sealed in the
// store until a minute before it expires; one process renews it at a time (the store's claim, a
// conditional write), and the others wait for that renewal or, past a bound, fetch their own.
import type { Credentials } from '../domain/connections';
import type { CredentialSource } from '../apps/types';
import { fetchAccessToken } from '../apps/outbound/oauth-token';
import { ToolError } from '../apps/types';
import type { ConnectionRepository } from '../store/port';
import { resealAll } from './reseal';
import type { SecretBox } from './secret-box';

/** A token this close to its expiry is renewed first. */
const RENEW_BEFORE_MS = 60_000;
/** How long a renewal claim holds (longer than a token request may take). */
const CLAIM_MS = 15_000;
/** How long a call waits for another process's renewal before fetching a token itself. */
const WAIT_FOR_RENEWAL_MS = 5_000;

/** The secret box's context of a connection's credentials (a sealed value copied elsewhere does not open). */
export const credentialsContext = (workspaceId: string, ref: string) => `connection:${workspaceId}:${ref}`;
const tokenContext = (workspaceId: string, ref: string) => `connection-token:${workspaceId}:${ref}`;

/** Seals again, with the first key, every connection's credentials and token sealed with another; how many. */
export function resealConnectionSecrets(connections: ConnectionRepository, box: SecretBox): Promise<number> {
  return resealAll(
    {
      page: (after: { workspaceId: string; ref: string } | null, limit) => connections.sealedValues(after, limit),
      positionOf: (row) => ({ workspaceId: row.workspaceId, ref: row.ref }),
      valuesOf: (row) => {
        const replace = (which: 'credentials' | 'token' | 'previous') => (from: string, to: string) =>
          connections.replaceSealed(row.workspaceId, row.ref, which, from, to);
        // A rotated signing secret still in its grace is sealed as the credentials were.
        return [
          { sealed: row.credentials, context: credentialsContext(row.workspaceId, row.ref), replace: replace('credentials') },
          { sealed: row.token, context: tokenContext(row.workspaceId, row.ref), replace: replace('token') },
          { sealed: row.previous, context: credentialsContext(row.workspaceId, row.ref), replace: replace('previous') },
        ];
      },
    },
    box,
  );
}

export function createCredentialSource(opts: {
  connections: ConnectionRepository;
  secrets: SecretBox;
  allowPrivate: boolean;
  now?: () => number;
}): CredentialSource {
  const now = opts.now ?? Date.now;
  const open = async (workspaceId: string, ref: string) => {
    const record = await opts.connections.get(workspaceId, ref);
    if (!record) throw new ToolError(`connection '${ref}' does not exist in this workspace`);
    const credentials: Credentials =
      record.sealedCredentials === null ? { kind: 'none' } : JSON.parse(opts.secrets.open(record.sealedCredentials, credentialsContext(workspaceId, ref)));
    return { record, credentials };
  };

  async function accessToken(workspaceId: string, ref: string, credentials: Extract<Credentials, { kind: 'oauth2_client_credentials' }>): Promise<string> {
    const waitUntil = now() + WAIT_FOR_RENEWAL_MS;
    for (;;) {
      const record = await opts.connections.get(workspaceId, ref);
      if (!record) throw new ToolError(`connection '${ref}' does not exist in this workspace`);
      if (record.token && record.token.expiresAtMs - RENEW_BEFORE_MS > now()) return opts.secrets.open(record.token.sealed, tokenContext(workspaceId, ref));
      const claimed = await opts.connections.claimRenewal(workspaceId, ref, now(), now() + CLAIM_MS, now() + RENEW_BEFORE_MS);
      if (claimed || now() >= waitUntil) {
        const token = await fetchToken(credentials, opts.allowPrivate);
        await opts.connections.storeToken(workspaceId, ref, opts.secrets.seal(token.accessToken, tokenContext(workspaceId, ref)), now() + token.expiresInMs);
        return token.accessToken;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  return {
    async headersFor(workspaceId, ref) {
      const { credentials } = await open(workspaceId, ref);
      switch (credentials.kind) {
        case 'none':
        case 'signing_secret': // verifies what the app sends; its calls send nothing
        case 'whatsapp': // the channel's sender reads it (services/channel-outbox.ts); no tool call sends it
          return {};
        case 'bearer':
          return { authorization: `Bearer ${credentials.token}` };
        case 'headers':
          return { ...credentials.headers };
        case 'oauth2_client_credentials':
          return { authorization: `Bearer ${await accessToken(workspaceId, ref, credentials)}` };
      }
    },
  };
}

const fetchToken = (credentials: Extract<Credentials, { kind: 'oauth2_client_credentials' }>, allowPrivate: boolean) =>
  fetchAccessToken(credentials, { allowPrivate });
