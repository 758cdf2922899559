// The store as the services see it: one repository per aggregate. Two adapters implement it
// (sqlite/, postgres/), and openStore (store/open.ts) picks one from the configuration.
import type { AppEventRepository } from './app-events';
import type { AppRepository } from './apps';
import type { ChannelMessageRepository } from './channel-messages';
import type { ConnectionRepository } from './connections';
import type { AgentRepository, WorkflowRepository, WorkspaceRepository } from './documents';
import type { EvalDatasetRepository } from './eval-datasets';
import type { EventEndpointRepository } from './event-endpoints';
import type { EvalRepository } from './evals';
import type { IdempotencyRepository } from './idempotency';
import type { KvRepository } from './kv';
import type { QuotaRepository } from './quotas';
import type { RunRepository } from './runs';
import type { ScheduleRepository } from './schedules';
import type { SkillRepository } from './skills';
import type { WebhookRepository } from './webhooks';

export interface Store {
  agents: AgentRepository;
  workflows: WorkflowRepository;
  /** The workspaces' skills (the whole workspace's: no spaces). */
  skills: SkillRepository;
  /** The workspaces' eval datasets (the whole workspace's: no spaces). */
  evalDatasets: EvalDatasetRepository;
  /** The evals: each one's plan, its case runs and grades, the credits it holds, its driver's lease. */
  evals: EvalRepository;
  connections: ConnectionRepository;
  /** The workspaces' event endpoints and the outbox of their deliveries (written by the database with each change). */
  eventEndpoints: EventEndpointRepository;
  /** The workspaces' own apps (the built-in ones are code: src/apps/builtin/). */
  apps: AppRepository;
  workspaces: WorkspaceRepository;
  runs: RunRepository;
  kv: KvRepository;
  /** The app_event triggers' listeners and the kv app's pending events. */
  appEvents: AppEventRepository;
  webhooks: WebhookRepository;
  /** The agents' email and WhatsApp messages, received and sent (the outbox), and the WhatsApp connections' agents. */
  channelMessages: ChannelMessageRepository;
  schedules: ScheduleRepository;
  idempotency: IdempotencyRepository;
  /** The request quotas' counters: in the process on SQLite (one process serves a file), in the database on PostgreSQL. */
  quotas: QuotaRepository;
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
