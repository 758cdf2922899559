// The documents of the store's port: agents and workflows kept whole as JSON, written by
// compare-and-set on their stamp, with the workspace balances beside them, and the versions each write keeps.
import type { Agent, AgentListItem, Workflow, WorkflowListItem } from '../../domain/types';

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
  | { ok: false; reason: 'too_large'; bytes: number }
  | ChannelTaken;

/**
 * An agent's write refused because another agent of the workspace is bound to the channel address
 * its document names (`whatsapp.connection` while `whatsapp.enabled`: one agent per connection).
 * Nothing was written. Only agents' writes answer it.
 */
export interface ChannelTaken {
  ok: false;
  reason: 'channel_taken';
  channel: 'whatsapp' | 'email';
  address: string;
  /** The agent bound to it (null: it let go meanwhile; the write may be tried again). */
  agentId: string | null;
}

export interface CreateOptions {
  /** With it, `doc.slug` is a base made unique (`base-2`, ...). */
  deriveSlug: boolean;
  /** The workspace's most documents of this kind. */
  limit: number;
  /** The most bytes the stored JSON may have (the workspace's document_bytes), if checked here. */
  maxBytes?: number;
}

/**
 * A replace that lost its compare-and-set answers with what is stored (`current`, no `reason`); one
 * refused for a channel address (agents only) has its `reason` and no `current`.
 */
export type ReplaceOutcome<T> =
  | { ok: true; record: DocumentRecord<T> }
  | { ok: false; reason?: undefined; current: DocumentRecord<T> | null }
  | (ChannelTaken & { current?: undefined });

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
  /**
   * `secrets`: the hashes of webhook secrets minted for this write; `meta`: its version's author and
   * changes (a create's, of the document as stored: its slug may be derived). Both stored in the same transaction.
   */
  create(
    workspaceId: string,
    id: string,
    doc: Agent,
    opts: CreateOptions,
    secrets: SecretRow[],
    meta: (stored: Agent) => VersionMeta,
  ): Promise<CreateOutcome<Agent>>;
  replace(workspaceId: string, id: string, expectedStampMicros: number, doc: Agent, secrets: SecretRow[], meta: VersionMeta): Promise<ReplaceOutcome<Agent>>;
  /** The agents' kept versions (each write keeps one). */
  versions: VersionRepository<Agent>;
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
  /** `meta`: the version's author and changes, stored in the same transaction. */
  create(
    workspaceId: string,
    id: string,
    doc: Workflow,
    opts: { limit: number; maxBytes?: number },
    meta: (stored: Workflow) => VersionMeta,
  ): Promise<CreateOutcome<Workflow>>;
  replace(workspaceId: string, id: string, expectedStampMicros: number, doc: Workflow, meta: VersionMeta): Promise<ReplaceOutcome<Workflow>>;
  /** Deletes the workflow and every version it kept. */
  remove(workspaceId: string, id: string): Promise<boolean>;
  /** The workflows' kept versions (each write keeps one). */
  versions: VersionRepository<Workflow>;
}

export interface WorkspaceRepository {
  /** The workspace's credit balance; a workspace seen for the first time starts with `initial`. */
  credits(workspaceId: string, initial: number): Promise<number>;
  setCredits(workspaceId: string, amount: number): Promise<void>;
}

// The kept versions: every write of an agent or a workflow keeps the document as it was stored by
// that write, numbered as the write numbered it, in the same transaction.

/** Who wrote a version and what the write changed (kept with the version). */
export interface VersionMeta {
  /** The `sub` of the token that wrote it; null for a version kept when versions began (the migration's). */
  author: string | null;
  changes: string[];
}

/** A kept version, without its document; its changes as stored (JSON text: a list's page sends it as is). */
export interface VersionEntry {
  version: number;
  stampMicros: number;
  author: string | null;
  changesJson: Serialized<string[]>;
}

/** A kept version with the document it kept, as serialised. */
export interface KeptVersion<T> extends VersionEntry {
  json: Serialized<T>;
}

export interface VersionRepository<T> {
  /** The document's versions numbered below `before` (all when null), newest first, at most `limit`. */
  list(documentId: string, before: number | null, limit: number): Promise<VersionEntry[]>;
  /** One version of the document, or null when it does not keep it. */
  get(documentId: string, version: number): Promise<KeptVersion<T> | null>;
  /**
   * Deletes at most `limit` versions that are not among their document's newest `keep` (so never
   * the current one) and that no run names; how many.
   */
  prune(keep: number, limit: number): Promise<number>;
}
