// The store contract suite's adapters: the one file of test/store that names the store's code. Every
// case of the suite runs against each adapter listed here (describe.each(adapters)), through the
// `Store` interface only. An adapter opens a store on a database of its own (SQLite: a file in a
// fresh temporary directory; PostgreSQL: a fresh database on the cluster test/global-setup.js
// started, TEST_PG_URL), and can open further stores on that same database: other replicas on
// PostgreSQL, other connections to the file on SQLite (which production never has: the serve lock
// keeps one server per file; the races that hold anyway are run on both).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Store } from '../../src/store/port';
import { openSqliteStore } from '../../src/store/sqlite';
import { openPostgresStore } from '../../src/store/postgres';
/** The PostgreSQL adapter's connections, for the cases that check how it talks to the server. */
export { openPgDatabase } from '../../src/store/postgres/database';
/** The PostgreSQL adapter's statistics refresh, for the case that reads a plan before and after it. */
export { refreshStatistics } from '../../src/store/postgres/planner-statistics';
/** The PostgreSQL run list's statement, for the case that reads its plan. */
export { pgRunListStatement } from '../../src/store/postgres/run-lists';
import { createPgDatabase } from '../helpers/database';

export type {
  AcceptOutcome,
  AgentRecord,
  CreateOptions,
  CreateOutcome,
  DocumentRecord,
  FireRecord,
  IdempotencyKey,
  Lease,
  NewRun,
  Parking,
  ReplaceOutcome,
  RunEventInput,
  RunListQuery,
  RunRow,
  ScheduleClaim,
  ScheduledFire,
  ScheduleRow,
  SecretRow,
  Store,
  StoredReply,
  WorkflowRecord,
} from '../../src/store/port';
export { APPROVAL_EXPIRED, FINAL_EVENT, RUN_EVENTS_LIMIT } from '../../src/store/port';
export type { Agent, Workflow } from '../../src/domain/types';
/** Fire rows kept per schedule. */
export { FIRES_KEPT } from '../../src/store/port';

export type AdapterName = 'sqlite' | 'postgres';

export interface OpenedStore {
  store: Store;
  /**
   * Another store on the same database, opened now (closed with this one): another replica on
   * PostgreSQL, another connection to the file on SQLite. What a store holds in memory (SQLite's
   * caches) is its own: read a race's outcome back through a store opened after it.
   */
  another(): Promise<Store>;
  /** The PostgreSQL database's URL (for the PostgreSQL-only cases that race a raw transaction), or null. */
  url: string | null;
  /** Closes every store opened on the database, and removes the database. */
  close(): Promise<void>;
}

export interface Adapter {
  name: AdapterName;
  open(): Promise<OpenedStore>;
}

/** The store with a close that closes it once (a case may close a store itself; the adapter closes what is left). */
function closingOnce(store: Store): Store {
  let closed: Promise<void> | null = null;
  return { ...store, close: () => (closed ??= store.close()) };
}

async function openSqlite(): Promise<OpenedStore> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-store-suite-'));
  const file = path.join(dir, 'store.db');
  const stores: Store[] = [];
  const open = () => {
    const store = closingOnce(openSqliteStore(file));
    stores.push(store);
    return store;
  };
  return {
    store: open(),
    another: async () => open(),
    url: null,
    close: async () => {
      for (const store of stores.reverse()) await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function openPostgres(): Promise<OpenedStore> {
  const database = await createPgDatabase();
  const stores: Store[] = [];
  const open = async () => {
    const store = closingOnce(await openPostgresStore(database.url, { poolSize: 8 }));
    stores.push(store);
    return store;
  };
  try {
    return {
      store: await open(),
      another: open,
      url: database.url,
      close: async () => {
        for (const store of stores.reverse()) await store.close();
        await database.drop();
      },
    };
  } catch (err) {
    await database.drop();
    throw err;
  }
}

export const adapters: Adapter[] = [
  { name: 'sqlite', open: openSqlite },
  { name: 'postgres', open: openPostgres },
];

/** The adapters that run several stores (replicas) on one database as production does: the PostgreSQL-only cases. */
export const replicated: Adapter[] = adapters.filter((a) => a.name === 'postgres');

/**
 * Opens a store of `adapter` for the enclosing describe block (beforeAll) and closes it after
 * (afterAll). `store` forwards to the store opened then, so a block's cases can name it directly.
 */
export function useStore(adapter: Adapter): { opened: OpenedStore; store: Store } {
  let current: OpenedStore | undefined;
  beforeAll(async () => {
    current = await adapter.open();
  });
  afterAll(() => current?.close());
  const open = (): OpenedStore => {
    if (!current) throw new Error('the store opens in beforeAll: use it inside a case');
    return current;
  };
  const opened: OpenedStore = {
    get store() {
      return open().store;
    },
    another: () => open().another(),
    get url() {
      return open().url;
    },
    close: () => open().close(),
  };
  const store = new Proxy({} as Store, { get: (_target, member) => open().store[member as keyof Store] });
  return { opened, store };
}
