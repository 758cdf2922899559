// The SQLite adapter of the store's port: one file, one process (the serve lock), writes batched by
// a group commit. The port is async (Promise-returning) although better-sqlite3 is synchronous, so
// both adapters sit behind it alike.
import path from 'node:path';
import { SIGNING_KEY_FILE, readOrCreateKeyFile } from '../../data-directory/key-file';
import { StampClock } from '../../domain/stamps';
import type { Store } from '../port';
import { openDatabase, walSync, type Db, type WalSync } from './database';
import { appRepository } from './apps';
import { channelMessageRepository } from './channel-messages';
import { connectionRepository } from './connections';
import { agentRepository, workflowRepository, workspaceRepository } from './documents';
import { evalDatasetRepository } from './eval-datasets';
import { evalRepository } from './evals';
import { eventEndpointRepository } from './event-endpoints';
import { createGroupCommit } from './group-commit';
import { idempotencyRepository } from './idempotency';
import { inProcessQuotas } from '../shared/quotas';
import { appEventRepository } from './app-events';
import { kvRepository } from './kv';
import { sqliteRunRepository } from './runs';
import { scheduleRepository } from './schedules';
import { skillRepository } from './skills';
import { webhookRepository } from './webhooks';

export function openSqliteStore(file: string, clock = new StampClock()): Store {
  const db = openDatabase(file);
  return createSqliteStore(db, clock, walSync(db));
}

/** Without `wal`, each commit syncs itself (synchronous=FULL) before its writers hear back. */
export function createSqliteStore(db: Db, clock: StampClock, wal: WalSync | null = null): Store {
  const commit = createGroupCommit(db, wal);
  const ping = db.prepare('SELECT 1').pluck();
  return {
    agents: agentRepository(db, commit, clock),
    workflows: workflowRepository(db, commit, clock),
    skills: skillRepository(db, commit, clock),
    evalDatasets: evalDatasetRepository(db, commit, clock),
    evals: evalRepository(db, commit),
    connections: connectionRepository(db, commit, clock),
    eventEndpoints: eventEndpointRepository(db, commit, clock),
    apps: appRepository(db, commit, clock),
    workspaces: workspaceRepository(db, commit),
    runs: sqliteRunRepository(db, commit),
    kv: kvRepository(db, commit),
    appEvents: appEventRepository(db, commit),
    webhooks: webhookRepository(db, commit),
    channelMessages: channelMessageRepository(db, commit),
    schedules: scheduleRepository(db, commit),
    idempotency: idempotencyRepository(db, commit),
    quotas: inProcessQuotas(),
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
