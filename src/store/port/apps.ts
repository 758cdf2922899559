// A workspace's own apps (issue 44): each kept with its settings as written and the tools its last
// successful refresh found. Writes are compare-and-set on the stamp, as documents' are.
import type { AppSettings, McpServerInfo } from '../../domain/apps';
import type { ToolDefinition } from '../../domain/catalog';

export interface StoredApp {
  slug: string;
  settings: AppSettings;
  /** The tools of the last refresh that succeeded (none before the first). */
  tools: ToolDefinition[];
  server: McpServerInfo | null;
  refreshedAt: string | null;
  refreshError: string | null;
  stampMicros: number;
}

export type AppCreateOutcome = { ok: true; app: StoredApp } | { ok: false; reason: 'slug_taken' | 'limit_reached' };
export type AppReplaceOutcome = { ok: true; app: StoredApp } | { ok: false; current: StoredApp | null };
/** What a refresh found: the tools and what the server said of itself, or why it failed. */
export type RefreshOutcome = { tools: ToolDefinition[]; server: McpServerInfo } | { error: string };

export interface AppRepository {
  /**
   * A text that changes whenever the workspace's apps or connections change (their counts and
   * latest stamps: every write's stamp is past the others), `0:0|0:0` for a workspace with none:
   * what the registry keeps its view of them by.
   */
  snapshotKey(workspaceId: string): Promise<string>;
  /** The workspace's apps, by slug. */
  list(workspaceId: string): Promise<StoredApp[]>;
  get(workspaceId: string, slug: string): Promise<StoredApp | null>;
  /**
   * Adds the app, unless the workspace holds `limit` apps or the slug is taken (`reserved`
   * included). With `deriveSlug`, `settings.slug` is a base made unique (`base-2`, ...).
   */
  create(workspaceId: string, settings: AppSettings, opts: { limit: number; deriveSlug: boolean; reserved: ReadonlySet<string> }): Promise<AppCreateOutcome>;
  /** Writes the settings if the stored stamp is still `expectedStamp`; the tools stay. */
  replace(workspaceId: string, slug: string, expectedStamp: number, settings: AppSettings): Promise<AppReplaceOutcome>;
  /** Records a refresh made at `at`: its tools, or its error (the tools stay). Null when the app is gone. */
  recordRefresh(workspaceId: string, slug: string, outcome: RefreshOutcome, at: string): Promise<StoredApp | null>;
  /** Removes the app if its stamp is still `expectedStamp`. */
  remove(workspaceId: string, slug: string, expectedStamp: number): Promise<'removed' | 'stale' | 'missing'>;
}
