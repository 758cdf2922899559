// The one place that picks the store's adapter: PostgreSQL when DATABASE_URL names one, else the
// SQLite file at DATABASE_PATH. The composition root (service.ts, cli.ts) calls it; services see
// only the port.
import type { Store } from './port';
import { openSqliteStore } from './sqlite';

export async function openStore(config: { databaseUrl: string | null; databasePath: string; pgPoolSize?: number }): Promise<Store> {
  if (!config.databaseUrl) return openSqliteStore(config.databasePath);
  // Loaded only when asked for: the embedded default never opens a PostgreSQL driver.
  const { openPostgresStore } = await import('./postgres');
  return openPostgresStore(config.databaseUrl, { poolSize: config.pgPoolSize });
}
