// The runs' event streams, fed from the stored events. Every open stream of a run shares one reader:
// when events are added (a write of this process announces it; a poll catches writes of other
// processes), the reader fetches what came after the oldest position among the run's streams once,
// and each stream takes the events after its own position. A thousand streams on one run cost one
// query per change, not a thousand. Each caller may hold a bounded number of streams open here
// (streams are this process's sockets, timers and channels, so the count is this process's too).
import type { Logger } from '../log';
import type { RunEventRow, Store } from '../store/port';

/** How often runs with open streams are read anyway (events written by another process). */
export const FEED_POLL_MS = 1000;
const PAGE = 500;

export interface RunEventFeed {
  /**
   * Delivers run `runId`'s events after `afterSeq` to `deliver`, in order and each once, as they are
   * stored. Returns the unsubscribe function.
   */
  subscribe(runId: string, afterSeq: number, deliver: (events: RunEventRow[]) => void, end: () => void): () => void;
  /**
   * Takes one of `caller`'s stream slots: the release function (call it once, when the stream
   * ends), or null when all of them are taken.
   */
  admit(caller: string): (() => void) | null;
  /** Stops reading and ends every stream (a shutdown: clients resume elsewhere with Last-Event-ID). */
  stop(): void;
}

interface Stream {
  after: number;
  deliver: (events: RunEventRow[]) => void;
  end: () => void;
}

interface Channel {
  streams: Set<Stream>;
  reading: boolean;
  /** Asked to read again while a read was running. */
  again: boolean;
}

export function createRunEventFeed(
  store: Store,
  logger: Logger,
  opts: { perCaller: number; pollMs?: number; streamsOpen?: (delta: 1 | -1) => void },
): RunEventFeed {
  const channels = new Map<string, Channel>();
  const pollMs = opts.pollMs ?? FEED_POLL_MS;
  /** Open streams by caller (absent: none). */
  const open = new Map<string, number>();

  async function pump(runId: string, channel: Channel): Promise<void> {
    if (channel.reading) {
      channel.again = true;
      return;
    }
    channel.reading = true;
    try {
      do {
        channel.again = false;
        for (;;) {
          if (!channel.streams.size) return;
          const from = Math.min(...[...channel.streams].map((s) => s.after));
          const rows = await store.runs.events(runId, from, PAGE);
          for (const stream of channel.streams) {
            const fresh = rows.filter((row) => row.seq > stream.after);
            if (!fresh.length) continue;
            stream.after = (fresh[fresh.length - 1] as RunEventRow).seq;
            stream.deliver(fresh);
          }
          if (rows.length < PAGE) break;
        }
      } while (channel.again);
    } catch (err) {
      logger.error({ err, runId }, 'could not read the events of a run');
    } finally {
      channel.reading = false;
    }
  }

  const wake = (runId: string) => {
    const channel = channels.get(runId);
    if (channel) void pump(runId, channel);
  };
  store.runs.onEvents(wake);
  const poller = setInterval(() => {
    for (const runId of channels.keys()) wake(runId);
  }, pollMs);
  poller.unref();

  return {
    subscribe(runId, afterSeq, deliver, end) {
      let channel = channels.get(runId);
      if (!channel) channels.set(runId, (channel = { streams: new Set(), reading: false, again: false }));
      const stream: Stream = { after: afterSeq, deliver, end };
      channel.streams.add(stream);
      void pump(runId, channel);
      return () => {
        channel.streams.delete(stream);
        if (!channel.streams.size && channels.get(runId) === channel) channels.delete(runId);
      };
    },
    admit(caller) {
      const count = open.get(caller) ?? 0;
      if (count >= opts.perCaller) return null;
      open.set(caller, count + 1);
      opts.streamsOpen?.(1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        opts.streamsOpen?.(-1);
        const left = (open.get(caller) ?? 1) - 1;
        if (left > 0) open.set(caller, left);
        else open.delete(caller);
      };
    },
    stop: () => {
      clearInterval(poller);
      for (const channel of [...channels.values()]) for (const stream of [...channel.streams]) stream.end();
      channels.clear();
    },
  };
}
