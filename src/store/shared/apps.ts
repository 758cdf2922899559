// What both adapters read alike of the apps and connections tables: a row as the port's record.
import type { AppSettings, McpServerInfo } from '../../domain/apps';
import type { ToolDefinition } from '../../domain/catalog';
import type { ConnectionStatus, CredentialsShown } from '../../domain/connections';
import type { ConnectionRecord, StoredApp } from '../port';

export interface AppRow {
  slug: string;
  settings: string;
  tools: string;
  server: string | null;
  refreshed_at: string | null;
  refresh_error: string | null;
  stamp_us: number;
}

export const APP_COLUMNS = 'slug, settings, tools, server, refreshed_at, refresh_error, stamp_us';

export function appOfRow(row: AppRow): StoredApp {
  return {
    slug: row.slug,
    settings: JSON.parse(row.settings) as AppSettings,
    tools: JSON.parse(row.tools) as ToolDefinition[],
    server: row.server === null ? null : (JSON.parse(row.server) as McpServerInfo),
    refreshedAt: row.refreshed_at,
    refreshError: row.refresh_error,
    stampMicros: Number(row.stamp_us),
  };
}

export interface ConnectionRow {
  ref: string;
  app: string;
  label: string | null;
  status: string;
  credentials_shown: string;
  credentials_sealed: string | null;
  last_error: string | null;
  tested_at: string | null;
  stamp_us: number;
  token_sealed: string | null;
  token_expires_ms: number | null;
  receiver_id: string | null;
  previous_sealed: string | null;
  previous_until_ms: number | null;
}

export const CONNECTION_COLUMNS =
  'ref, app, label, status, credentials_shown, credentials_sealed, last_error, tested_at, stamp_us, token_sealed, token_expires_ms, receiver_id, previous_sealed, previous_until_ms';

export function connectionOfRow(row: ConnectionRow): ConnectionRecord {
  return {
    ref: row.ref,
    app: row.app,
    label: row.label,
    status: row.status as ConnectionStatus,
    credentialsShown: JSON.parse(row.credentials_shown) as CredentialsShown,
    sealedCredentials: row.credentials_sealed,
    lastError: row.last_error,
    testedAt: row.tested_at,
    stampMicros: Number(row.stamp_us),
    token: row.token_sealed === null || row.token_expires_ms === null ? null : { sealed: row.token_sealed, expiresAtMs: Number(row.token_expires_ms) },
    receiverId: row.receiver_id,
    previous: row.previous_sealed === null || row.previous_until_ms === null ? null : { sealed: row.previous_sealed, untilMs: Number(row.previous_until_ms) },
  };
}
