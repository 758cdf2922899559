// Steering runs: cancel (200 once cancelled, 202 while work in flight ends), decisions on held tool
// calls, and the event streams (text/event-stream, or the stored events as JSON for pollers).
import * as control from '../../services/run-control';
import * as events from '../../services/run-events';
import type { Principal, ServiceContext } from '../../services/context';
import type { RunKind } from '../../store/port';
import type { EventStream, Handlers } from './types';

/** Whether the client asked for JSON rather than a stream (an Accept naming JSON and not event-stream). */
export function wantsJson(accept: string | undefined): boolean {
  return !!accept && accept.includes('application/json') && !accept.includes('text/event-stream');
}

/**
 * The stream of a run's events after `after`: every stored one, then each as it is stored, ending
 * after the final one. `release` gives the caller's stream slot back when it ends, however it ends.
 */
function eventStream(ctx: ServiceContext, runId: string, after: number, release: () => void): EventStream {
  return (out) => {
    const heartbeat = setInterval(() => out.write(': keep-alive\n\n'), ctx.eventsHeartbeatMs);
    const unsubscribe = ctx.runEvents.subscribe(
      runId,
      after,
      (rows) => {
        for (const row of rows) {
          out.write(events.eventFrame(runId, row));
          if (events.isFinal(row)) return finish();
        }
      },
      () => finish(),
    );
    function stopped() {
      clearInterval(heartbeat);
      unsubscribe();
      release();
    }
    function finish() {
      stopped();
      out.end();
    }
    void out.closed.then(stopped);
  };
}

async function follow(ctx: ServiceContext, who: Principal, runId: string, kind: RunKind, headers: Record<string, string | undefined>) {
  const id = await events.readableRun(ctx, who, runId, kind);
  const after = events.positionOf(headers['last-event-id']);
  if (wantsJson(headers.accept)) return { status: 200 as const, body: { data: await events.storedEvents(ctx, id, after) } };
  const from = await events.streamStart(ctx, id, after);
  if (from === null) return { status: 204 as const, noContent: true as const };
  return { status: 200 as const, stream: eventStream(ctx, id, from, events.streamSlot(ctx, who)) };
}

export const runControlHandlers: Pick<
  Handlers,
  'cancelAgentRun' | 'cancelWorkflowRun' | 'decideToolCall' | 'streamAgentRunEvents' | 'streamWorkflowRunEvents'
> = {
  cancelAgentRun: async ({ ctx, principal, params }) => {
    const { stopped, run } = await control.cancelRun(ctx, principal, params.runId, 'agent');
    return stopped ? { status: 200, body: { data: run } } : { status: 202, body: { data: run } };
  },
  cancelWorkflowRun: async ({ ctx, principal, params }) => {
    const { stopped, run } = await control.cancelRun(ctx, principal, params.runId, 'workflow');
    return stopped ? { status: 200, body: { data: run } } : { status: 202, body: { data: run } };
  },
  decideToolCall: async ({ ctx, principal, params, body }) => ({
    status: 200,
    body: { data: await control.decideToolCall(ctx, principal, params.runId, params.callId, body) },
  }),
  streamAgentRunEvents: ({ ctx, principal, params, headers }) => follow(ctx, principal, params.runId, 'agent', headers),
  streamWorkflowRunEvents: ({ ctx, principal, params, headers }) => follow(ctx, principal, params.runId, 'workflow', headers),
};
