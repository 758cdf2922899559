// An eval's events for its follower (docs/evals.md): the stored events after a position, as the API
// shows them (the EvalEvent schema), the server-sent-event frames, and the stream itself. The events
// are written by the driver of whichever process holds the eval, so a follower polls the store for
// them (every POLL_MS, a bounded read) rather than waiting for a notice from another process.
import type { components } from '../../generated/api';
import { FINAL_EVAL_EVENT, type EvalEventRow } from '../store/port';
import type { ServiceContext } from './context';

type EvalEvent = components['schemas']['EvalEvent'];

/** How often a stream looks for new events. */
const POLL_MS = 500;
/** Events read at once (an eval has at most two per case run and two more). */
const PAGE = 200;

/** Where a stream starts for a client that saw events up to `after`: null when the eval ended and the client saw its last event. */
export async function evalStreamStart(ctx: ServiceContext, evalId: string, after: number): Promise<number | null> {
  const last = await ctx.store.evals.lastEvent(evalId);
  if (!last) return 0;
  if (after >= last.seq) return last.type === FINAL_EVAL_EVENT ? null : last.seq;
  return after;
}

/** The stored events after `after`, at most PAGE (for a client that polls). */
export async function storedEvalEvents(ctx: ServiceContext, evalId: string, after: number): Promise<EvalEvent[]> {
  const rows = await ctx.store.evals.events(evalId, after, PAGE);
  return rows.map((row) => ({
    seq: row.seq,
    eval_id: evalId,
    type: row.type as EvalEvent['type'],
    at: row.at,
    data: JSON.parse(row.data) as Record<string, unknown>,
  }));
}

/** One server-sent event: `id:` its number, `event:` its type, `data:` the EvalEvent (the stored data spliced in as is). */
export function evalEventFrame(evalId: string, row: EvalEventRow): string {
  const json = `{"seq":${row.seq},"eval_id":"${evalId}","type":${JSON.stringify(row.type)},"at":"${row.at}","data":${row.data}}`;
  return `id: ${row.seq}\nevent: ${row.type}\ndata: ${json}\n\n`;
}

/** What a stream writes to. */
export interface StreamOut {
  write(chunk: string): void;
  end(): void;
  closed: Promise<void>;
}

/**
 * Streams the eval's events after `from` to `out`: the stored ones, then each as it is stored,
 * ending after the last (`eval.finished`). `release` gives the caller's stream slot back when it
 * ends, however it ends.
 */
export function followEval(ctx: ServiceContext, evalId: string, from: number, out: StreamOut, release: () => void): void {
  let position = from;
  let done = false;
  let timer: NodeJS.Timeout | undefined;
  const heartbeat = setInterval(() => out.write(': keep-alive\n\n'), ctx.eventsHeartbeatMs);
  const stop = () => {
    if (done) return;
    done = true;
    clearInterval(heartbeat);
    clearTimeout(timer);
    release();
  };
  const poll = async (): Promise<void> => {
    try {
      const rows = await ctx.store.evals.events(evalId, position, PAGE);
      for (const row of rows) {
        if (done) return;
        out.write(evalEventFrame(evalId, row));
        position = row.seq;
        if (row.type === FINAL_EVAL_EVENT) {
          stop();
          return out.end();
        }
      }
      // A full page: more are waiting now.
      if (!done) timer = setTimeout(() => void poll(), rows.length === PAGE ? 0 : POLL_MS);
    } catch {
      // The store failed (it is going down): the client reconnects with Last-Event-ID.
      stop();
      out.end();
    }
  };
  void out.closed.then(stop);
  void poll();
}
