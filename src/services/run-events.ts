// A run's events for its reader: the stored events after a position, as the API shows them (the
// RunEvent schema), and the server-sent-event frames of a stream.
import type { components } from '../../generated/api';
import { FINAL_EVENT, RUN_EVENTS_LIMIT, type RunEventRow, type RunKind } from '../store';
import type { Principal, ServiceContext } from './context';
import { findRun } from './runs';

type RunEvent = components['schemas']['RunEvent'];

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

export const isFinal = (row: RunEventRow) => row.type === FINAL_EVENT;
