// Hearing other replicas' writes: one dedicated connection (not the pool's: a pooled connection
// is handed to other work and LISTEN belongs to its session) that LISTENs on every channel asked
// for. Writers send their notifications once their writes committed (notifier.ts), so a replica
// that hears one reads what it tells of, and never hears of a write rolled back.
//
// A notification is a hint, never the only way: while the connection is down (a restart, a
// failover, a network cut) notifications are lost, so after every (re)connection every listener is
// called with null ("you may have missed some: look again"), and the readers poll anyway.
import { randomUUID } from 'node:crypto';
import pg from 'pg';

export interface Notifications {
  /** This process's id (random): writers put it in their payloads, so that a replica can tell its own. */
  readonly instanceId: string;
  /** Calls `listener` with each notification's payload on `channel`, and with null after every (re)connection. */
  on(channel: string, listener: (payload: string | null) => void): void;
  /** Stops listening and reconnecting. */
  close(): Promise<void>;
}

export interface ListenOptions {
  /** The first wait before reconnecting; it doubles with each failure in a row, up to `maxRetryMs`. */
  firstRetryMs?: number;
  maxRetryMs?: number;
}

/** One connection and the channels LISTENed on it (a new connection LISTENs again). */
interface Connection {
  client: pg.Client;
  channels: Set<string>;
  /** Its statements, one after another (pg 8 deprecates a query sent while another runs): the connect, then the LISTENs. */
  work: Promise<void>;
}

function deliverTo(listeners: ((payload: string | null) => void)[] | undefined, payload: string | null): void {
  for (const listener of listeners ?? []) {
    try {
      listener(payload);
    } catch {
      // A listener's failure is its own: it must not stop the others, nor throw into pg's socket handler.
    }
  }
}

/** Capped exponential back-off with jitter, so that replicas do not all reconnect at once. */
const backOffMs = (failures: number, firstMs: number, maxMs: number) => Math.min(maxMs, firstMs * 2 ** Math.min(failures, 20)) * (0.5 + Math.random() / 2);

export function listenForNotifications(url: string, opts: ListenOptions = {}): Notifications {
  const firstRetryMs = opts.firstRetryMs ?? 250;
  const maxRetryMs = opts.maxRetryMs ?? 15_000;
  const listeners = new Map<string, ((payload: string | null) => void)[]>();
  let current: Connection | undefined;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const deliver = (channel: string, payload: string | null) => deliverTo(listeners.get(channel), payload);

  /** LISTENs, after what `conn` is doing, on the channels not yet listened on it (a Map's iteration also visits channels added meanwhile). */
  const listenAll = (conn: Connection): Promise<void> =>
    (conn.work = conn.work.then(async () => {
      for (const channel of listeners.keys()) {
        if (conn.channels.has(channel)) continue;
        conn.channels.add(channel);
        await conn.client.query(`LISTEN ${conn.client.escapeIdentifier(channel)}`);
      }
    }));

  /** Drops `conn` (once: its 'error' and 'end' may both come) and connects again after a back-off. */
  const lost = (conn: Connection): void => {
    if (current !== conn) return;
    current = undefined;
    void Promise.resolve()
      .then(() => conn.client.end())
      .catch(() => undefined);
    if (closed) return;
    timer = setTimeout(connect, backOffMs(failures++, firstRetryMs, maxRetryMs));
    timer.unref(); // waiting to reconnect keeps no process alive
  };

  const connect = (): void => {
    timer = undefined;
    if (closed) return;
    // TCP keep-alive: an idle listener whose peer vanished without a word (a failover) finds out;
    // a connect that hangs (an unreachable host) gives up and is tried again, and close() is not held by it.
    const client = new pg.Client({ connectionString: url, keepAlive: true, connectionTimeoutMillis: 10_000, application_name: 'build-api-listener' });
    const conn: Connection = { client, channels: new Set(), work: Promise.resolve() };
    current = conn;
    // The 'error' listener stays for the client's life: an error emitted with none would crash the process.
    conn.client.on('error', () => lost(conn));
    conn.client.on('end', () => lost(conn));
    conn.client.on('notification', (message) => {
      if (current === conn) deliver(message.channel, message.payload ?? '');
    });
    conn.work = client.connect().then(() => undefined);
    listenAll(conn)
      .then(() => {
        if (current !== conn) return;
        failures = 0;
        // Whatever was sent while nothing listened is lost: every listener looks again.
        for (const channel of listeners.keys()) deliver(channel, null);
      })
      .catch(() => lost(conn));
  };

  connect();
  return {
    instanceId: randomUUID(),
    on(channel, listener) {
      const list = listeners.get(channel);
      if (list) return void list.push(listener);
      listeners.set(channel, [listener]);
      // A new channel while connected (or connecting: its LISTEN follows the connect).
      const conn = current;
      if (conn) listenAll(conn).catch(() => lost(conn));
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      const conn = current;
      current = undefined;
      if (conn) await conn.client.end().catch(() => undefined);
    },
  };
}
