// The notifications this process sends the other replicas, sent once the writes they tell of have
// committed, not from inside them: a transaction that NOTIFYs holds a lock on the database's
// notification queue from its commit's start to its end, so with synchronous commit every other
// notifying commit, in any workspace, would wait for this one's WAL flush (issue 25,
// docs/benchmarks.md). Batched: the notifications that arrive while one statement is in flight go
// in the next one. A notification is a hint (notifications.ts): one that is lost (a failed send, a
// process that stops first) only makes a reader wait for its next poll.

/** The most notifications one statement sends. */
const MAX_BATCH = 500;

export class Notifier {
  private pending = new Map<string, { channel: string; payload: string }>();
  private sending = false;

  /** `send` sends each (channel, payload) pair as a notification, in one statement. */
  constructor(private readonly send: (channels: string[], payloads: string[]) => Promise<unknown>) {}

  /** Sends `payload` on `channel` soon (a repeat of one still pending is sent once, as PostgreSQL folds repeats in one transaction). */
  notify(channel: string, payload: string): void {
    this.pending.set(`${channel}\n${payload}`, { channel, payload });
    if (!this.sending) void this.flush();
  }

  private async flush(): Promise<void> {
    this.sending = true;
    while (this.pending.size) {
      const batch = [...this.pending.values()].slice(0, MAX_BATCH);
      for (const n of batch) this.pending.delete(`${n.channel}\n${n.payload}`);
      try {
        await this.send(
          batch.map((n) => n.channel),
          batch.map((n) => n.payload),
        );
      } catch {
        // Lost hints: the readers poll anyway.
      }
    }
    this.sending = false;
  }
}

/** The statement that sends a batch (on any connection: it writes nothing, so its commit waits for no flush). */
export const NOTIFY_ALL = 'SELECT pg_notify(t.channel, t.payload) FROM unnest($1::text[], $2::text[]) AS t (channel, payload)';
