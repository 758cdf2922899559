// What every use case receives: the store, the workspace limits, and who is asking.
import type { WorkspaceLimits } from '../config';
import type { Store } from '../store';

export interface ServiceContext {
  store: Store;
  limits: WorkspaceLimits;
}

/** The caller, as the verified token names them. */
export interface Principal {
  userId: string;
  workspaceId: string;
}
