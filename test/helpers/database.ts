// Which store the integration and reliability tests run against: the SQLite file (default) or
// PostgreSQL (TEST_STORE=postgres: test/global-setup.js starts a throwaway cluster and sets
// TEST_PG_URL). Each service or server a test starts gets a database of its own.
import crypto from 'node:crypto';
import pg from 'pg';

export const storeUnderTest: 'sqlite' | 'postgres' = process.env.TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

export interface TestDatabase {
  /** What the service's environment needs to use it (nothing for SQLite: the caller's DATABASE_PATH). */
  env: Record<string, string>;
  /** The PostgreSQL URL of this database, or null with SQLite. */
  url: string | null;
  drop(): Promise<void>;
}

function serverUrl(): string {
  const url = process.env.TEST_PG_URL;
  if (!url) throw new Error('TEST_STORE=postgres needs TEST_PG_URL (set by test/global-setup.js)');
  return url;
}

/** A new, empty PostgreSQL database on the test cluster (whatever TEST_STORE says). */
export async function createPgDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `test_${crypto.randomBytes(6).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: serverUrl() });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** A fresh database of the store under test. */
export async function freshDatabase(): Promise<TestDatabase> {
  if (storeUnderTest === 'sqlite') return { env: {}, url: null, drop: async () => undefined };
  const db = await createPgDatabase();
  return { env: { DATABASE_URL: db.url }, url: db.url, drop: db.drop };
}
