// The SQLite driver for the running Node. better-sqlite3 12 is built against Node's own C++ API,
// which Node 24 changed: on 24 it aborts the process when a statement is collected. better-sqlite3
// 13 moved to Node-API (stable across Node versions, shipped prebuilt) but requires Node 22 or
// later. The package installs both majors (13 under the alias `better-sqlite3-13`), and this file —
// the only one that imports either — picks one at start: 13 wherever it runs, 12 on Node 20. Both
// have the same API, so the store sees one type.
import type BetterSqlite3 from 'better-sqlite3';

export type SqliteDatabase = BetterSqlite3.Database;
export type SqliteStatement = BetterSqlite3.Statement<unknown[]>;

export interface SqliteDriver {
  /** The package name require() loads. */
  readonly module: 'better-sqlite3' | 'better-sqlite3-13';
  /** What it is, for logs and errors. */
  readonly name: string;
}

const NODE_API_DRIVER: SqliteDriver = { module: 'better-sqlite3-13', name: 'better-sqlite3 13 (Node-API)' };
const NATIVE_DRIVER: SqliteDriver = { module: 'better-sqlite3', name: 'better-sqlite3 12' };

/** The driver for a Node of version `nodeVersion` (process.versions.node's form, "24.11.1"). */
export function sqliteDriverFor(nodeVersion: string): SqliteDriver {
  const major = Number.parseInt(nodeVersion, 10);
  return major >= 22 ? NODE_API_DRIVER : NATIVE_DRIVER;
}

/** The native module could not be loaded: not installed, or built for another Node. */
export class SqliteDriverError extends Error {}

let loaded: typeof BetterSqlite3 | undefined;

function driverConstructor(): typeof BetterSqlite3 {
  if (loaded) return loaded;
  const driver = sqliteDriverFor(process.versions.node);
  try {
    loaded = require(driver.module) as typeof BetterSqlite3;
  } catch (err) {
    const cause = String((err as Error).message ?? err).split('\n')[0];
    throw new SqliteDriverError(
      `the SQLite driver ${driver.name} cannot be loaded on Node ${process.versions.node}: ${cause} ` +
        `(run \`npm rebuild ${driver.module}\`, or \`npm ci\` again with this Node)`,
    );
  }
  return loaded;
}

/** A connection to the SQLite file `file` (or ':memory:'), through the running Node's driver. */
export function openSqlite(file: string, options?: BetterSqlite3.Options): SqliteDatabase {
  const Database = driverConstructor();
  return new Database(file, options);
}
