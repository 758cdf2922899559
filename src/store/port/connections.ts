// A workspace's connections: which app each connects to, the credentials its calls send (sealed by
// the services, never in clear), the outcome of its last check, and the OAuth 2.0 access token
// fetched with its client credentials (sealed too), renewed by one process at a time.
import type { ConnectionStatus, CredentialsShown } from '../../domain/connections';
import type { Connection } from '../../domain/types';

export interface ConnectionRecord {
  ref: string;
  app: string;
  label: string | null;
  status: ConnectionStatus;
  credentialsShown: CredentialsShown;
  /** The credentials as the services sealed them (null: none to send). */
  sealedCredentials: string | null;
  lastError: string | null;
  testedAt: string | null;
  stampMicros: number;
  /** The access token held, sealed, and when it expires. */
  token: { sealed: string; expiresAtMs: number } | null;
  /** Where its app's signed events arrive (`/events/<receiverId>`), or null: the app sends none over HTTP. */
  receiverId: string | null;
  /** A rotated signing secret that still verifies (sealed as the credentials were) until `untilMs`, or null. */
  previous: { sealed: string; untilMs: number } | null;
}

/** What a create writes (a replace: all but `ref` and `app`, which stay). */
export type ConnectionWrite = Omit<ConnectionRecord, 'stampMicros' | 'token' | 'previous'>;

export interface SealedConnectionValues {
  workspaceId: string;
  ref: string;
  credentials: string | null;
  token: string | null;
  previous: string | null;
}

export type ConnectionCreateOutcome = { ok: true; record: ConnectionRecord } | { ok: false; reason: 'ref_taken' | 'limit_reached' };
export type ConnectionReplaceOutcome = { ok: true; record: ConnectionRecord } | { ok: false; current: ConnectionRecord | null };

export interface ConnectionRepository {
  /** The list items, by ref. */
  list(workspaceId: string): Promise<Connection[]>;
  /** Adds a connection without credentials, or sets the one with its ref (the command line's `connections add`). */
  upsert(workspaceId: string, connection: Connection): Promise<void>;
  get(workspaceId: string, ref: string): Promise<ConnectionRecord | null>;
  /** The connection that receives events at `/events/<receiverId>`, with its workspace, or null. */
  byReceiver(receiverId: string): Promise<{ workspaceId: string; record: ConnectionRecord } | null>;
  /** Adds the connection unless its ref is taken or the workspace holds `limit` connections. */
  create(workspaceId: string, write: ConnectionWrite, limit: number): Promise<ConnectionCreateOutcome>;
  /**
   * Writes what `write` holds if the stored stamp is still `expectedStamp` (credentials changed:
   * the held token goes). `sealedCredentials` undefined keeps the stored ones.
   */
  replace(
    workspaceId: string,
    ref: string,
    expectedStamp: number,
    write: Omit<ConnectionWrite, 'ref' | 'app' | 'sealedCredentials' | 'credentialsShown' | 'receiverId'> & {
      sealedCredentials?: string | null;
      credentialsShown?: CredentialsShown;
      /** With new credentials: the rotated secret that keeps verifying (null: none does). Ignored without them. */
      previous?: ConnectionRecord['previous'];
    },
  ): Promise<ConnectionReplaceOutcome>;
  /** Records a check's outcome (a new stamp: the connection reads otherwise). Null when the connection is gone. */
  recordCheck(
    workspaceId: string,
    ref: string,
    check: { status: ConnectionStatus; lastError: string | null; testedAt: string },
  ): Promise<ConnectionRecord | null>;
  /** Removes the connection if its stamp is still `expectedStamp`. */
  remove(workspaceId: string, ref: string, expectedStamp: number): Promise<'removed' | 'stale' | 'missing'>;
  /**
   * Claims the renewal of the connection's access token until `untilMs`, unless another process
   * holds an unexpired claim, or the held token is good past `renewBeforeMs` (a renewal that landed
   * since the caller looked). One conditional write: one winner.
   */
  claimRenewal(workspaceId: string, ref: string, nowMs: number, untilMs: number, renewBeforeMs: number): Promise<boolean>;
  /**
   * The sealed values of every workspace's connections after (`workspaceId`, `ref`) in that order,
   * at most `limit` (a key rotation seals them again: services/connection-credentials.ts).
   */
  sealedValues(after: { workspaceId: string; ref: string } | null, limit: number): Promise<SealedConnectionValues[]>;
  /** Replaces a sealed value if it is still `from` (one conditional write); whether it did. */
  replaceSealed(workspaceId: string, ref: string, which: 'credentials' | 'token' | 'previous', from: string, to: string): Promise<boolean>;
  /** Keeps a renewed access token (sealed) and releases the claim. */
  storeToken(workspaceId: string, ref: string, sealed: string, expiresAtMs: number): Promise<void>;
}
