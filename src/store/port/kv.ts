// The workspace's key-value store that the runs' kv tools read and write, and the kv app's events
// those writes emit (docs/triggers.md).

/**
 * What a write tells of itself, for its event: the event's id (unique) and how many kv events led to
 * the run that wrote (its chain). The event is written in the write's transaction when, and only
 * when, an app_event trigger of the workspace listens to the kv app (and not when nothing changed).
 */
export interface KvWriteOrigin {
  eventId: string;
  chain: number;
}

export interface KvRepository {
  get(workspaceId: string, key: string): Promise<unknown | undefined>;
  list(workspaceId: string, prefix: string, limit: number): Promise<string[]>;
  /**
   * Stores `value` under `key`; false, storing nothing, when the key is new and the workspace holds
   * `maxKeys` keys already (checked in the write itself). Emits `key.set` (see KvWriteOrigin).
   */
  set(workspaceId: string, key: string, value: unknown, maxKeys?: number, origin?: KvWriteOrigin): Promise<boolean>;
  /** Deletes the key; whether it was there. Emits `key.deleted` when it was (see KvWriteOrigin). */
  delete(workspaceId: string, key: string, origin?: KvWriteOrigin): Promise<boolean>;
}
