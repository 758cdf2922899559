// A run's events for its reader: the stored events after a position, as the API shows them (the
// RunEvent schema), and the server-sent-event frames of a stream.
import type { components } from '../../generated/api';
import { FINAL_EVENT, RUN_EVENTS_LIMIT, type RunEventRow, type RunKind } from '../store/port';
import { ApiError } from '../errors';
import type { Principal, ServiceContext } from './context';
import { findRun } from './runs';

type RunEvent = components['schemas']['RunEvent'];

/** How long a caller refused a stream is told to wait (Retry-After): a stream lasts as long as its run. */
export const STREAM_RETRY_AFTER_S = 10;

/**
 * Where a stream of run `runId` starts, for a client that saw events up to `after`: null when the
 * run has ended and the client saw its final event (nothing will ever come). Past the last event of
 * a run still going, it resumes after that last event: the final event, not stored yet when the
 * last one was read, comes after it and ends the stream.
 */
export async function streamStart(ctx: ServiceContext, runId: string, after: number): Promise<number | null> {
  const last = await ctx.store.runs.lastEvent(runId);
  if (!last) return 0;
  if (after >= last.seq) return isFinal(last) ? null : last.seq;
  return after;
}

/** One of the caller's stream slots (released when the stream ends), or 429. */
export function streamSlot(ctx: ServiceContext, who: Principal): () => void {
  const release = ctx.runEvents.admit(`${who.workspaceId}\n${who.userId}`);
  if (release) return release;
  ctx.metrics.rateLimited('event_streams');
  throw new ApiError(
    429,
    `${ctx.eventStreamsPerCaller} event streams are open for this caller already, the limit (EVENT_STREAMS_PER_CALLER); close one or retry after ${STREAM_RETRY_AFTER_S} s`,
    {},
    { 'Retry-After': String(STREAM_RETRY_AFTER_S) },
  );
}

/** `Last-Event-ID` as the position to resume after (0: from the start). */
export function positionOf(lastEventId: string | undefined): number {
  return lastEventId === undefined ? 0 : Number(lastEventId);
}

/** The run's id, when `who` may read it (as the run read decides: 404 otherwise). */
export async function readableRun(ctx: ServiceContext, who: Principal, runId: string, kind: RunKind): Promise<string> {
  return (await findRun(ctx, who, runId, kind)).id;
}

export async function storedEvents(ctx: ServiceContext, runId: string, after: number): Promise<RunEvent[]> {
  const rows = await ctx.store.runs.events(runId, after, RUN_EVENTS_LIMIT + 1);
  return rows.map((row) => ({ seq: row.seq, run_id: runId, type: row.type, at: row.at, data: JSON.parse(row.data) as Record<string, unknown> }));
}

/** One server-sent event: `id:` its number, `event:` its type, `data:` the RunEvent (the stored data spliced in as is). */
export function eventFrame(runId: string, row: RunEventRow): string {
  const json = `{"seq":${row.seq},"run_id":"${runId}","type":${JSON.stringify(row.type)},"at":"${row.at}","data":${row.data}}`;
  return `id: ${row.seq}\nevent: ${row.type}\ndata: ${json}\n\n`;
}

export const isFinal = (row: Pick<RunEventRow, 'type'>) => row.type === FINAL_EVENT;
