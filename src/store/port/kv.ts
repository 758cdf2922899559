// The workspace's key-value store that the runs' kv tools read and write.

export interface KvRepository {
  get(workspaceId: string, key: string): Promise<unknown | undefined>;
  list(workspaceId: string, prefix: string, limit: number): Promise<string[]>;
  /**
   * Stores `value` under `key`; false, storing nothing, when the key is new and the workspace holds
   * `maxKeys` keys already (checked in the write itself).
   */
  set(workspaceId: string, key: string, value: unknown, maxKeys?: number): Promise<boolean>;
  delete(workspaceId: string, key: string): Promise<boolean>;
}
