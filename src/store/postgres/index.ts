// The PostgreSQL adapter of the store (DATABASE_URL=postgres://…): the same interface as the SQLite
// one, for any number of replicas on one database. Nothing here is answered from this process's
// memory: every read asks the database, so a write committed by any replica is seen by the next
// read on every other (read-your-writes through a load balancer). Guarantees are constraints and
// conditional writes whose affected-row counts are checked, under READ COMMITTED; a document's
// stamps only grow (each write's is past the stored one, by the writing process's clock); the run queue is leased (runs.ts); other replicas hear of queued
// runs and new run events through LISTEN/NOTIFY (notifications.ts), with polls as the safety net.
import { StampClock } from '../../domain/stamps';
import type { Store } from '../port';
import { openPgDatabase } from './database';
import { migratePg } from './migrate';
import { pgAppRepository } from './apps';
import { pgChannelMessageRepository } from './channel-messages';
import { pgConnectionRepository } from './connections';
import { pgEventEndpointRepository } from './event-endpoints';
import { pgAgentRepository, pgWorkflowRepository, pgWorkspaceRepository } from './documents';
import { pgEvalDatasetRepository } from './eval-datasets';
import { pgEvalRepository } from './evals';
import { pgScheduleRepository } from './schedules';
import { pgSkillRepository } from './skills';
import { pgWebhookRepository } from './webhooks';
import { pgIdempotencyRepository } from './idempotency';
import { pgQuotaRepository } from './quotas';
import { pgAppEventRepository } from './app-events';
import { pgKvRepository } from './kv';
import { pgRunRepository } from './runs';
import { listenForNotifications } from './notifications';
import { keepStatistics } from './planner-statistics';

export interface PgStoreOptions {
  /** Connections in the pool (PG_POOL_SIZE). */
  poolSize?: number;
}

/** The name of the built-in issuer's key in issuer_keys. */
const SIGNING_KEY = 'local-issuer';

export async function openPostgresStore(url: string, opts: PgStoreOptions = {}): Promise<Store> {
  const db = openPgDatabase(url, { max: opts.poolSize });
  try {
    await migratePg(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  const notifications = listenForNotifications(url);
  const statistics = keepStatistics(db);
  const clock = new StampClock();
  return {
    agents: pgAgentRepository(db, clock),
    workflows: pgWorkflowRepository(db, clock),
    skills: pgSkillRepository(db, clock),
    evalDatasets: pgEvalDatasetRepository(db, clock),
    evals: pgEvalRepository(db),
    connections: pgConnectionRepository(db, clock),
    eventEndpoints: pgEventEndpointRepository(db, clock),
    apps: pgAppRepository(db, clock),
    workspaces: pgWorkspaceRepository(db),
    runs: pgRunRepository(db, notifications),
    kv: pgKvRepository(db),
    appEvents: pgAppEventRepository(db),
    webhooks: pgWebhookRepository(db),
    channelMessages: pgChannelMessageRepository(db),
    schedules: pgScheduleRepository(db),
    idempotency: pgIdempotencyRepository(db),
    quotas: pgQuotaRepository(db),
    async signingKey(generate) {
      const stored = await db.row<{ pem: string }>('SELECT pem FROM issuer_keys WHERE name = $1', [SIGNING_KEY]);
      if (stored) return stored.pem;
      // Of replicas starting together, one insert wins (the primary key); the others read its key.
      await db.count('INSERT INTO issuer_keys (name, pem, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING', [
        SIGNING_KEY,
        generate(),
        new Date().toISOString(),
      ]);
      return ((await db.row<{ pem: string }>('SELECT pem FROM issuer_keys WHERE name = $1', [SIGNING_KEY])) as { pem: string }).pem;
    },
    ping: async () => {
      await db.rows('SELECT 1');
    },
    close: async () => {
      await statistics.stop();
      await notifications.close();
      await db.close();
    },
  };
}
