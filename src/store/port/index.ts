// The store's port: the interfaces and types the services use. It imports no adapter; the
// adapters (sqlite/, postgres/) implement it and store/open.ts picks one.
export * from './app-events';
export * from './apps';
export * from './channel-messages';
export * from './connections';
export * from './documents';
export * from './event-endpoints';
export * from './eval-datasets';
export * from './evals';
export * from './idempotency';
export * from './kv';
export * from './quotas';
export * from './run-events';
export * from './runs';
export * from './schedules';
export * from './skills';
export * from './store';
export * from './webhooks';
