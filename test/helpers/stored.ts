// What a test reads of a service's database behind its API, whichever store it runs on: a query
// (written with `?` placeholders and SQL both dialects read alike) on the SQLite file or the
// PostgreSQL database, and every byte stored (to show that a secret is in no row).
import fs from 'node:fs';
import { openSqlite } from '../../src/sqlite-driver';
import pg from 'pg';
import { types } from '../../src/store/postgres/database';

/** Where a service keeps its data: its SQLite file, or its PostgreSQL database when databaseUrl is set. */
export interface StoredAt {
  databasePath: string;
  databaseUrl: string | null;
}

// COUNT(*) and bigint columns as numbers, as the adapter (and better-sqlite3) gives them.
async function onPg<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, types });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** `?` placeholders as PostgreSQL's `$1, $2, …`. */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

/** The rows of a query, on the SQLite file or the PostgreSQL database. */
export async function storedRows<R = Record<string, unknown>>(at: StoredAt, sql: string, params: unknown[] = []): Promise<R[]> {
  if (at.databaseUrl) return onPg(at.databaseUrl, async (client) => (await client.query(numbered(sql), params)).rows as R[]);
  const db = openSqlite(at.databasePath, { readonly: true });
  try {
    return db.prepare(sql).all(...params) as R[];
  } finally {
    db.close();
  }
}

/** The first column of the first row (a count, say), or undefined. */
export async function storedValue<V = unknown>(at: StoredAt, sql: string, params: unknown[] = []): Promise<V | undefined> {
  const [row] = await storedRows(at, sql, params);
  return row ? (Object.values(row)[0] as V) : undefined;
}

/** A write behind the service's back (a test arranging a state the API cannot make). */
export async function storedWrite(at: StoredAt, sql: string, params: unknown[] = []): Promise<number> {
  if (at.databaseUrl) return onPg(at.databaseUrl, async (client) => (await client.query(numbered(sql), params)).rowCount ?? 0);
  const db = openSqlite(at.databasePath);
  try {
    db.pragma('busy_timeout = 5000');
    return db.prepare(sql).run(...params).changes;
  } finally {
    db.close();
  }
}

/** Sets a workspace's balance as stored (PostgreSQL also keeps part of it in credit slots: emptied). */
export async function setStoredBalance(at: StoredAt, workspaceId: string, credits: number): Promise<void> {
  await storedWrite(at, 'INSERT INTO workspaces (id, credits, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET credits = excluded.credits', [
    workspaceId,
    credits,
    new Date().toISOString(),
  ]);
  if (at.databaseUrl) await storedWrite(at, 'UPDATE workspace_credit_slots SET credits = 0 WHERE workspace_id = ?', [workspaceId]);
}

/** Everything the database holds, as bytes: the SQLite file and its WAL, or every row of every table of the PostgreSQL database as text. */
export async function storedBytes(at: StoredAt): Promise<Buffer> {
  if (!at.databaseUrl) {
    return Buffer.concat([at.databasePath, `${at.databasePath}-wal`].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f)));
  }
  return onPg(at.databaseUrl, async (client) => {
    const tables = (await client.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'`)).rows;
    const texts: string[] = [];
    for (const { name } of tables) {
      for (const row of (await client.query<{ t: string }>(`SELECT t::text AS t FROM "${name}" t`)).rows) texts.push(row.t);
    }
    return Buffer.from(texts.join('\n'));
  });
}

/** The built-in issuer's key as a PostgreSQL store keeps it (the server that created it has started). */
export async function storedSigningKey(url: string): Promise<string> {
  const pem = await storedValue<string>({ databasePath: '', databaseUrl: url }, 'SELECT pem FROM issuer_keys');
  if (pem === undefined) throw new Error('no issuer key stored yet');
  return pem;
}
