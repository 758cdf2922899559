// The store interface the services use, its SQLite implementation, and the choice between it and
// the PostgreSQL one (postgres/index.ts: DATABASE_URL). The interface is async (Promise-returning)
// although better-sqlite3 is synchronous, so both adapters sit behind it alike. The store knows
// nothing about HTTP.
import path from 'node:path';
import { idempotencyRepository, type IdempotencyRepository } from './idempotency';
import { openDatabase, walSync, type Db, type WalSync } from './db';
import { createDocumentTable, type CreateOptions, type CreateOutcome, type DocumentRecord, type ReplaceOutcome } from './documents';
import type { ListVersion } from './list-cache';
import { StampClock } from '../domain/stamps';
import type { Agent, AgentListItem, Connection, Workflow, WorkflowListItem } from '../domain/types';
import { kvRepository, runRepository, type KvRepository, type RunRepository } from './runs';
import { webhookRepository, type WebhookRepository } from './webhooks';
import { scheduleRepository, scheduleSync, type ScheduleRepository } from './schedules';
import { agentSchedules, workflowSchedules } from '../domain/triggers';
import { createGroupCommit, type GroupCommit } from './group-commit';
import { SIGNING_KEY_FILE, readOrCreateKeyFile } from './key-file';

export type { CreateOptions, CreateOutcome, DocumentRecord, ReplaceOutcome, Serialized } from './documents';
export type { ListVersion } from './list-cache';
export type { KvRepository, Lease, RunRepository, RunRow, RunStatus, RunKind, RunEnd, NewRun, AcceptOutcome, ApprovalRow, CancelOutcome, DecideOutcome, Parking, ProgressOutcome } from './runs';
export { APPROVAL_EXPIRED } from './runs';
export type { RunEventInput, RunEventRow } from './run-events';
export { FINAL_EVENT, RUN_EVENTS_LIMIT } from './run-events';
export type { WebhookRepository, WebhookTarget } from './webhooks';
export type { RunListQuery, RunListRow } from './run-lists';
export type { IdempotencyKey, IdempotencyRepository, StoredReply } from './idempotency';
export { isUuid } from './documents';
export type { ScheduleRepository, ScheduleRow, ScheduleClaim, ScheduledFire, FireRow, FireRecord } from './schedules';
export type AgentRecord = DocumentRecord<Agent>;
export type WorkflowRecord = DocumentRecord<Workflow>;

/** A stamp column (microseconds) as the ISO 8601 text of `formatStamp`, computed by SQLite. */
const STAMP_SQL = `strftime('%Y-%m-%dT%H:%M:%S', stamp_us / 1000000, 'unixepoch') || '.' || printf('%06d', stamp_us % 1000000) || 'Z'`;

export interface AgentRepository {
  /** The list items of the workspace, ordered by slug, as JSON built by SQLite (sent as is). */
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
  /** The list items of the workspace, ordered by slug, as JSON built by SQLite (sent as is). */
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

export interface Store {
  agents: AgentRepository;
  workflows: WorkflowRepository;
  connections: ConnectionRepository;
  workspaces: WorkspaceRepository;
  runs: RunRepository;
  kv: KvRepository;
  webhooks: WebhookRepository;
  schedules: ScheduleRepository;
  idempotency: IdempotencyRepository;
  /**
   * The built-in issuer's signing key (PKCS#8 PEM): the stored one, or the one `generate` makes now
   * and stores, unless another process stored one first (then theirs). SQLite keeps it in a file
   * beside the database; PostgreSQL in the database, where every replica reads the same key.
   */
  signingKey(generate: () => string): Promise<string>;
  /** Throws when the database cannot answer (readiness probe). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function openSqliteStore(file: string, clock = new StampClock()): Store {
  const db = openDatabase(file);
  return createSqliteStore(db, clock, walSync(db));
}

/** The store DATABASE_URL names (PostgreSQL), or else the SQLite file at DATABASE_PATH. */
export async function openStore(config: { databaseUrl: string | null; databasePath: string; pgPoolSize?: number }): Promise<Store> {
  if (!config.databaseUrl) return openSqliteStore(config.databasePath);
  // Loaded only when asked for: the embedded default never opens a PostgreSQL driver.
  const { openPostgresStore } = await import('./postgres');
  return openPostgresStore(config.databaseUrl, { poolSize: config.pgPoolSize });
}

/** Without `wal`, each commit syncs itself (synchronous=FULL) before its writers hear back. */
export function createSqliteStore(db: Db, clock: StampClock, wal: WalSync | null = null): Store {
  const commit = createGroupCommit(db, wal);
  const agents = agentRepository(db, commit, clock);
  const workflows = workflowRepository(db, commit, clock);
  const connections = connectionRepository(db, commit);
  const workspaces = workspaceRepository(db, commit);
  const ping = db.prepare('SELECT 1').pluck();
  return {
    agents,
    workflows,
    connections,
    workspaces,
    runs: runRepository(db, commit),
    kv: kvRepository(db, commit),
    webhooks: webhookRepository(db, commit),
    schedules: scheduleRepository(db, commit),
    idempotency: idempotencyRepository(db, commit),
    ping: async () => {
      ping.get();
    },
    signingKey: async (generate) => readOrCreateKeyFile(db.memory ? null : path.join(path.dirname(db.name), SIGNING_KEY_FILE), generate),
    close: async () => {
      commit.drain();
      db.close();
      wal?.close();
    },
  };
}

function agentRepository(db: Db, commit: GroupCommit, clock: StampClock): AgentRepository {
  const schedules = scheduleSync(db);
  const insertTrigger = db.prepare('INSERT OR IGNORE INTO agent_triggers (id, agent_id, kind) VALUES (?, ?, ?)');
  const setSecret = db.prepare('UPDATE agent_triggers SET secret_hash = ?, secret_prefix = ?, signing_secret = ? WHERE id = ? AND agent_id = ?');
  const clearSigning = db.prepare('UPDATE agent_triggers SET signing_secret = NULL WHERE id = ? AND signing_secret IS NOT NULL');
  const triggerIds = db.prepare('SELECT id FROM agent_triggers WHERE agent_id = ?').pluck();
  const deleteTrigger = db.prepare('DELETE FROM agent_triggers WHERE id = ?');
  // A secret that stops opening its trigger is remembered (by hash), so a delivery to it is 410, not 404.
  const retire = db.prepare(
    `INSERT OR IGNORE INTO retired_webhook_secrets (secret_hash, trigger_id, reason, retired_at)
     SELECT secret_hash, id, @reason, @now FROM agent_triggers WHERE id = @id AND secret_hash IS NOT NULL AND secret_hash != @keep`,
  );
  const table = createDocumentTable<Agent, SecretRow[], AgentListItem[]>(db, commit, clock, {
    table: 'agents',
    maxSlugLength: 160,
    listSql: `SELECT json_group_array(json_object('id', id, 'slug', slug, 'name', name, 'status', status, 'updated_at', ${STAMP_SQL}))
      FROM (SELECT id, slug, name, status, stamp_us FROM agents WHERE workspace_id = ? ORDER BY slug)`,
    columns: { name: (doc) => doc.name, status: (doc) => doc.status },
    // Trigger rows follow the document: new ones are added (with their secret's hash), the ones it
    // no longer names go, and with them their secrets, so a dropped webhook's URL stops opening it
    // (its secret is retired: 410). A secret minted for an existing trigger (rotation) retires the old one.
    afterWrite: (agentId, doc, secrets = [], workspaceId) => {
      schedules.sync(workspaceId, agentId, agentSchedules(doc), Date.now());
      const now = new Date().toISOString();
      const keep = new Set(doc.triggers.map((t) => t.id));
      for (const id of triggerIds.all(agentId) as string[]) {
        if (keep.has(id)) continue;
        retire.run({ id, reason: 'dropped', now, keep: '' });
        deleteTrigger.run(id);
      }
      for (const t of doc.triggers) {
        insertTrigger.run(t.id, agentId, t.kind);
        if (t.kind === 'webhook' && t.signing === 'none') clearSigning.run(t.id);
      }
      for (const s of secrets) {
        retire.run({ id: s.triggerId, reason: 'rotated', now, keep: s.hash });
        setSecret.run(s.hash, s.prefix, s.signingSecret, s.triggerId, agentId);
      }
    },
  });
  return {
    list: async (workspaceId) => table.list(workspaceId),
    find: async (workspaceId, ref) => table.find(workspaceId, ref),
    create: (workspaceId, id, doc, opts, secrets) => table.create(workspaceId, id, doc, opts, secrets),
    replace: (workspaceId, id, expected, doc, secrets) => table.replace(workspaceId, id, expected, doc, secrets),
  };
}

function workflowRepository(db: Db, commit: GroupCommit, clock: StampClock): WorkflowRepository {
  const schedules = scheduleSync(db);
  const table = createDocumentTable<Workflow, undefined, WorkflowListItem[]>(db, commit, clock, {
    table: 'workflows',
    maxSlugLength: 80,
    listSql: `SELECT json_group_array(json_object('slug', slug, 'name', name, 'enabled', json(CASE enabled WHEN 1 THEN 'true' ELSE 'false' END), 'version', version, 'updated_at', ${STAMP_SQL}))
      FROM (SELECT slug, name, enabled, version, stamp_us FROM workflows WHERE workspace_id = ? ORDER BY slug)`,
    columns: { name: (doc) => doc.name, enabled: (doc) => (doc.enabled ? 1 : 0) },
    // The workflow's schedule row follows it, like an agent's (see scheduleSync).
    afterWrite: (id, doc, _extra, workspaceId) => schedules.sync(workspaceId, id, workflowSchedules(id, doc), Date.now()),
    afterRemove: (id) => schedules.removeOwner(id),
  });
  return {
    list: async (workspaceId) => table.list(workspaceId),
    find: async (workspaceId, ref) => table.find(workspaceId, ref),
    create: (workspaceId, id, doc, opts) => table.create(workspaceId, id, doc, { ...opts, deriveSlug: false }),
    replace: (workspaceId, id, expected, doc) => table.replace(workspaceId, id, expected, doc),
    remove: (workspaceId, id) => table.remove(workspaceId, id),
  };
}

function connectionRepository(db: Db, commit: GroupCommit): ConnectionRepository {
  const list = db.prepare('SELECT ref, app, label, status FROM connections WHERE workspace_id = ? ORDER BY ref');
  const upsert = db.prepare(
    `INSERT INTO connections (workspace_id, ref, app, label, status, created_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (workspace_id, ref) DO UPDATE SET app = excluded.app, label = excluded.label, status = excluded.status`,
  );
  return {
    list: async (workspaceId) => list.all(workspaceId) as Connection[],
    upsert: (workspaceId, c) =>
      commit.run(() => {
        upsert.run(workspaceId, c.ref, c.app, c.label, c.status, new Date().toISOString());
      }),
  };
}

function workspaceRepository(db: Db, commit: GroupCommit): WorkspaceRepository {
  const ensure = db.prepare('INSERT OR IGNORE INTO workspaces (id, credits, created_at) VALUES (?, ?, ?)');
  const credits = db.prepare('SELECT credits FROM workspaces WHERE id = ?').pluck();
  const set = db.prepare(
    `INSERT INTO workspaces (id, credits, created_at) VALUES (?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET credits = excluded.credits`,
  );
  return {
    credits: (workspaceId, initial) =>
      commit.run(() => {
        ensure.run(workspaceId, initial, new Date().toISOString());
        return credits.get(workspaceId) as number;
      }),
    setCredits: (workspaceId, amount) =>
      commit.run(() => {
        set.run(workspaceId, amount, new Date().toISOString());
      }),
  };
}
