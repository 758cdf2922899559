// Lookups of what the database holds now, asked by many requests at once and answered by one query
// per batch: the confirmations behind the adapter's held versions (a document's stamp, a workspace's
// list version, an agent's trigger status version). At most one query of a lookup is in flight; the
// lookups asked meanwhile wait for it to return and go together in the next. So every lookup is
// answered by a query sent after it was asked: it sees every write acknowledged before it was asked
// (on any replica), which is what lets a held version be answered after it.
//
// Under load a query answers many reads (a batch is what arrived during one round trip), so the
// database's work per read falls as the load grows; alone, a read waits for one round trip, or two
// when a batch was just sent. A batch holds at most MAX_BATCH keys (the query's size stays bounded;
// the rest wait for the next).

const MAX_BATCH = 256;

interface Waiter<V> {
  resolve: (value: V | undefined) => void;
  reject: (err: unknown) => void;
}

export class CoalescedLookup<Q, V> {
  /** The lookups not sent yet, by key: each key once in a batch, however many ask for it. */
  private waiting = new Map<string, { query: Q; waiters: Waiter<V>[] }>();
  private inFlight = false;

  /**
   * `fetch` answers a batch: the value of each key it knows (a key it leaves out is answered
   * undefined). `query` is what the fetch needs of a key besides the key itself.
   */
  constructor(private readonly fetch: (batch: ReadonlyMap<string, Q>) => Promise<ReadonlyMap<string, V>>) {}

  /** The value of `key` as the database holds it now (after this call), or undefined. */
  get(key: string, query: Q): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const pending = this.waiting.get(key);
      if (pending) pending.waiters.push({ resolve, reject });
      else this.waiting.set(key, { query, waiters: [{ resolve, reject }] });
      if (!this.inFlight) this.send();
    });
  }

  private send(): void {
    if (!this.waiting.size) return;
    const batch = new Map<string, { query: Q; waiters: Waiter<V>[] }>();
    for (const [key, pending] of this.waiting) {
      if (batch.size === MAX_BATCH) break;
      batch.set(key, pending);
    }
    for (const key of batch.keys()) this.waiting.delete(key);
    this.inFlight = true;
    const queries = new Map([...batch].map(([key, { query }]) => [key, query]));
    this.fetch(queries)
      .then(
        (values) => {
          for (const [key, { waiters }] of batch) for (const w of waiters) w.resolve(values.get(key));
        },
        (err: unknown) => {
          for (const { waiters } of batch.values()) for (const w of waiters) w.reject(err);
        },
      )
      .finally(() => {
        this.inFlight = false;
        this.send();
      });
  }
}
