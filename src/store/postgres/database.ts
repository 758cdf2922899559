// The PostgreSQL connection pool and the few ways the adapter talks through it: a query on any
// pooled connection, and a transaction on one connection (READ COMMITTED, PostgreSQL's default) that
// is run again from the start when the server aborts it for a deadlock or a serialization failure.
// Every guarantee of the adapter is a constraint or a conditional write whose affected-row count is
// checked inside such a transaction, never a lock or a flag held in this process.
import pg from 'pg';
import type { Ack } from '../shared/ack';

/** What a transaction's work is given: statements on the transaction's connection. */
export interface Sql {
  /** The rows the statement returns. */
  rows<R>(text: string, params?: readonly unknown[]): Promise<R[]>;
  /** The first row, or undefined. */
  row<R>(text: string, params?: readonly unknown[]): Promise<R | undefined>;
  /** How many rows the statement wrote (an INSERT, UPDATE or DELETE). */
  count(text: string, params?: readonly unknown[]): Promise<number>;
}

export interface PgDatabase extends Sql {
  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it throws. With
   * `ack: 'visible'` (the run workers' own progress, as with SQLite: see Ack in group-commit.ts) the
   * commit returns once visible, without waiting for the server to flush its WAL (see `visible`).
   */
  transaction<T>(work: (sql: Sql) => Promise<T>, opts?: { ack?: Ack }): Promise<T>;
  /**
   * Writes acknowledged once visible, each statement committed on its own (one round trip, no BEGIN
   * or COMMIT): on connections of their own whose session has synchronous_commit off, so a commit
   * does not wait for the server to flush its WAL. A server crash may lose the last such commits,
   * never a part of one, and never one that a later durable commit depended on (PostgreSQL flushes
   * the WAL in order).
   */
  visible: Sql;
  /** The durable writes' and the reads' connections. */
  pool: pg.Pool;
  close(): Promise<void>;
}

// int8 (bigint, COUNT(*)) as a number: stamps (µs), due times (ms) and credits stay below 2^53.
const INT8_OID = 20;
/** The type parsers of every connection the adapter opens (tests reading its tables use them too). */
export const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** SQLSTATEs after which a transaction can simply be run again. */
const RETRYABLE = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected
const MAX_ATTEMPTS = 5;
/** Whether the work that failed with `err` at `attempt` is run again. */
const runAgain = (err: unknown, attempt: number): boolean => attempt < MAX_ATTEMPTS && RETRYABLE.has((err as { code?: string }).code ?? '');

/**
 * Sends a statement that commits on its own again when the server aborted it for a deadlock or a
 * serialization failure (as a transaction is run again), up to the same number of attempts.
 */
export async function retried<T>(statement: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (err) {
      if (runAgain(err, attempt)) continue;
      throw err;
    }
  }
}

/** A unique or primary-key constraint refused the write. */
export const isUniqueViolation = (err: unknown): boolean => (err as { code?: string }).code === '23505';

const NUL = '\u0000';

/**
 * The parameters as PostgreSQL can take them: its text cannot hold U+0000, and a statement given one
 * fails (in an array too). The API refuses it in requests and the runtime replaces it in the texts runs write (a
 * tool's error quoting a response); this is the net under both, so no write fails for it.
 */
function storable(params: readonly unknown[]): unknown[] {
  if (!params.some(holdsNul)) return params as unknown[];
  return params.map(withoutNul);
}
const holdsNul = (p: unknown): boolean => (typeof p === 'string' ? p.includes(NUL) : Array.isArray(p) && p.some(holdsNul));
const withoutNul = (p: unknown): unknown => (typeof p === 'string' ? p.replaceAll(NUL, '\uFFFD') : Array.isArray(p) ? p.map(withoutNul) : p);

/**
 * The name each statement text is prepared under. A named statement is parsed and planned once per
 * connection (pg keeps which ones a connection has), then sent as Bind and Execute only. Only
 * statements with parameters are named: one without may hold several commands, which a prepared
 * statement cannot. Bounded by the adapter's statement texts (a run list's are its shapes, the limit a parameter).
 */
const preparedNames = new Map<string, string>();
const nameOf = (text: string): string => {
  let name = preparedNames.get(text);
  if (name === undefined) preparedNames.set(text, (name = `build_${preparedNames.size}`));
  return name;
};

/** Sends statements through `send` (a pooled connection, or a transaction's). */
function statements(send: (query: pg.QueryConfig) => Promise<pg.QueryResult>): Sql {
  const query = (text: string, params: readonly unknown[]) =>
    send(params.length ? { name: nameOf(text), text, values: storable(params) } : { text, values: storable(params) });
  return {
    rows: async <R>(text: string, params: readonly unknown[] = []) => (await query(text, params)).rows as R[],
    row: async <R>(text: string, params: readonly unknown[] = []) => (await query(text, params)).rows[0] as R | undefined,
    count: async (text: string, params: readonly unknown[] = []) => (await query(text, params)).rowCount ?? 0,
  };
}

function openPool(url: string, max: number, applicationName: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types,
    application_name: applicationName,
    // A connection the server dropped (a restart, a failover) is replaced on next use; an idle
    // client's error must not crash the process.
    idleTimeoutMillis: 30_000,
  });
  pool.on('error', () => undefined);
  return pool;
}

/**
 * What each connection's session is set to, once, before its first statement (a SET, rather than a
 * startup parameter, which PgBouncer would refuse):
 *  - a named statement is planned once per connection for any values, not for each call's: the
 *    server would otherwise plan again on every call any statement whose plan its values would
 *    change (an array's length does), and planning the document writes cost more than running them
 *    (issue 25, docs/benchmarks.md). A run list's plan then still reads runs_listed, which a case
 *    checks;
 *  - the visible writes' sessions do not wait for the WAL flush (see PgDatabase.visible).
 */
const GENERIC_PLANS = 'SET plan_cache_mode TO force_generic_plan';
const SESSION = { durable: GENERIC_PLANS, visible: `${GENERIC_PLANS}; SET synchronous_commit TO off` };

const configured = new WeakSet<pg.PoolClient>();
async function configuredClient(pool: pg.Pool, settings: string): Promise<pg.PoolClient> {
  const client = await pool.connect();
  if (configured.has(client)) return client;
  try {
    await client.query(settings);
  } catch (err) {
    client.release(err as Error);
    throw err;
  }
  configured.add(client);
  return client;
}

/** One statement on a connection of `pool`, given back after; a connection whose error was not the server's refusal is discarded. */
async function onConnection(pool: pg.Pool, settings: string, query: pg.QueryConfig): Promise<pg.QueryResult> {
  const client = await configuredClient(pool, settings);
  let broken: Error | undefined;
  try {
    return await client.query(query);
  } catch (err) {
    // The server's refusal of a statement leaves the connection usable; any other error, not.
    if (!(err instanceof pg.DatabaseError)) broken = err as Error;
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * Two pools of up to `max` connections each (opened as needed): one for reads and durable writes,
 * one for the writes acknowledged once visible (see PgDatabase.visible).
 */
export function openPgDatabase(url: string, opts: { max?: number; applicationName?: string } = {}): PgDatabase {
  const name = opts.applicationName ?? 'build-api';
  const pool = openPool(url, opts.max ?? 10, name);
  const visiblePool = openPool(url, opts.max ?? 10, name);
  const onPool = statements((q) => onConnection(pool, SESSION.durable, q));
  return {
    ...onPool,
    pool,
    visible: statements((q) => onConnection(visiblePool, SESSION.visible, q)),
    async transaction<T>(work: (sql: Sql) => Promise<T>, opts: { ack?: Ack } = {}): Promise<T> {
      for (let attempt = 1; ; attempt++) {
        const client = opts.ack === 'visible' ? await configuredClient(visiblePool, SESSION.visible) : await configuredClient(pool, SESSION.durable);
        let broken: Error | undefined;
        try {
          await client.query('BEGIN');
          const value = await work(statements((q) => client.query(q)));
          await client.query('COMMIT');
          return value;
        } catch (err) {
          await client.query('ROLLBACK').catch((e: Error) => (broken = e));
          if (runAgain(err, attempt)) continue;
          throw err;
        } finally {
          client.release(broken);
        }
      }
    },
    close: async () => void (await Promise.all([pool.end(), visiblePool.end()])),
  };
}
