// What every use case receives: the store, the workspace limits, and who is asking.
import type { WorkspaceLimits } from '../config';
import type { Store } from '../store';

export interface ServiceContext {
  store: Store;
  limits: WorkspaceLimits;
  /** Where the service is reached from outside: webhook URLs are built on it. */
  publicBaseUrl: string;
}

/** The caller, as the verified token names them. */
export interface Principal {
  userId: string;
  workspaceId: string;
}
