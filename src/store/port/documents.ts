// The documents of the store's port: agents and workflows kept whole as JSON, written by
// compare-and-set on their stamp, with the connections and workspace balances beside them.
import type { Agent, AgentListItem, Connection, Workflow, WorkflowListItem } from '../../domain/types';

/** JSON text known to serialise a T (so it can be sent as is, without parsing it first). */
export type Serialized<T> = string & { readonly __serializes?: T };

export interface DocumentRecord<T> {
  id: string;
  workspaceId: string;
  slug: string;
  version: number;
  stampMicros: number;
  /** The stored document exactly as serialised: a read sends it as is. */
  json: Serialized<T>;
  /** The parsed document (parsed on first use). Shared by every reader of this version: never mutate it. */
  readonly document: T;
  /** The stamp as the document's `updated_at` text (the ETag's value). */
  readonly updatedAt: string;
}

export type CreateOutcome<T> =
  | { ok: true; record: DocumentRecord<T> }
  | { ok: false; reason: 'slug_taken' | 'limit_reached' }
  | { ok: false; reason: 'too_large'; bytes: number };

export interface CreateOptions {
  /** With it, `doc.slug` is a base made unique (`base-2`, ...). */
  deriveSlug: boolean;
  /** The workspace's most documents of this kind. */
  limit: number;
  /** The most bytes the stored JSON may have (the workspace's document_bytes), if checked here. */
  maxBytes?: number;
}

export type ReplaceOutcome<T> = { ok: true; record: DocumentRecord<T> } | { ok: false; current: DocumentRecord<T> | null };

/** One built list of documents. Its identity names the version: the HTTP layer keeps its encoded reply by it. */
export interface ListVersion<T = unknown> {
  readonly json: Serialized<T>;
}

export type AgentRecord = DocumentRecord<Agent>;
export type WorkflowRecord = DocumentRecord<Workflow>;

export interface AgentRepository {
  /** The list items of the workspace, ordered by slug, as JSON (sent as is). */
  list(workspaceId: string): Promise<ListVersion<AgentListItem[]>>;
  /** `ref` is an id (UUID) or a slug. Null when the workspace has no such agent. */
  find(workspaceId: string, ref: string): Promise<AgentRecord | null>;
  /** `secrets`: the hashes of webhook secrets minted for this write, stored in the same transaction. */
  create(workspaceId: string, id: string, doc: Agent, opts: CreateOptions, secrets: SecretRow[]): Promise<CreateOutcome<Agent>>;
  replace(workspaceId: string, id: string, expectedStampMicros: number, doc: Agent, secrets: SecretRow[]): Promise<ReplaceOutcome<Agent>>;
}

/** What the store keeps of a webhook URL's secret (never the secret itself), minted by this write. */
export interface SecretRow {
  triggerId: string;
  hash: string;
  prefix: string;
  /** The trigger's Standard Webhooks signing key, when it signs (minted with the URL's secret). */
  signingSecret: string | null;
}

export interface WorkflowRepository {
  /** The list items of the workspace, ordered by slug, as JSON (sent as is). */
  list(workspaceId: string): Promise<ListVersion<WorkflowListItem[]>>;
  find(workspaceId: string, ref: string): Promise<WorkflowRecord | null>;
  create(workspaceId: string, id: string, doc: Workflow, opts: { limit: number; maxBytes?: number }): Promise<CreateOutcome<Workflow>>;
  replace(workspaceId: string, id: string, expectedStampMicros: number, doc: Workflow): Promise<ReplaceOutcome<Workflow>>;
  remove(workspaceId: string, id: string): Promise<boolean>;
}

export interface ConnectionRepository {
  list(workspaceId: string): Promise<Connection[]>;
  /** Adds the connection, or replaces the one with the same ref. */
  upsert(workspaceId: string, connection: Connection): Promise<void>;
}

export interface WorkspaceRepository {
  /** The workspace's credit balance; a workspace seen for the first time starts with `initial`. */
  credits(workspaceId: string, initial: number): Promise<number>;
  setCredits(workspaceId: string, amount: number): Promise<void>;
}

