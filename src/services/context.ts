// What every use case receives: the store, the workspace limits, and who is asking.
import type { WorkspaceLimits } from '../config';
import type { CatalogModel } from '../domain/types';
import type { QueuedRun } from '../runtime/runner';
import type { Store } from '../store';

export interface ServiceContext {
  store: Store;
  limits: WorkspaceLimits;
  /** Where the service is reached from outside: webhook URLs are built on it. */
  publicBaseUrl: string;
  /** The models the configured providers offer (the catalog lists them). */
  models: CatalogModel[];
  /** The credit balance of a workspace seen for the first time. */
  defaultCredits: number;
  /** Deliveries a webhook trigger accepts per minute; beyond, 429. */
  webhookRatePerMinute: number;
  /** Hands a run just queued to the run workers; without one, they look for queued runs in the store. */
  notifyRunQueued: (run?: QueuedRun) => void;
}

/** The caller, as the verified token names them. */
export interface Principal {
  userId: string;
  workspaceId: string;
}
