// Eval operations (docs/evals.md): read the validated request, call the service, shape the reply.
import { evalStreamStart, followEval, storedEvalEvents } from '../../services/eval-events';
import * as evals from '../../services/evals';
import { positionOf, streamSlot } from '../../services/run-events';
import { nextLink } from './next-link';
import { wantsJson } from './run-control';
import type { Handlers } from './types';

export const evalHandlers: Pick<Handlers, 'startEval' | 'listAgentEvals' | 'getEval' | 'compareEvals' | 'streamEvalEvents'> = {
  startEval: async ({ ctx, principal, params, body }) => {
    const started = await evals.startEval(ctx, principal, params.ref, body);
    return { status: 202, headers: { Location: `/api/build/evals/${started.id}` }, body: { data: started } };
  },

  listAgentEvals: async ({ ctx, principal, params, query }) => {
    const page = await evals.listAgentEvals(ctx, principal, params.ref, query);
    return { status: 200, headers: nextLink(`/api/build/agents/${encodeURIComponent(params.ref)}/evals`, query, page.next_cursor), body: page };
  },

  getEval: async ({ ctx, principal, params }) => ({ status: 200, body: { data: evals.evalOf(await evals.findEval(ctx, principal, params.evalId)) } }),

  compareEvals: async ({ ctx, principal, params }) => ({
    status: 200,
    body: { data: await evals.compareEvals(ctx, principal, params.evalId, params.baseline) },
  }),

  // As a run's events are followed (run-control.ts): stored events as JSON for pollers, else a stream.
  streamEvalEvents: async ({ ctx, principal, params, headers }) => {
    const { id } = await evals.findEval(ctx, principal, params.evalId);
    const after = positionOf(headers['last-event-id']);
    if (wantsJson(headers.accept)) return { status: 200, body: { data: await storedEvalEvents(ctx, id, after) } };
    const from = await evalStreamStart(ctx, id, after);
    if (from === null) return { status: 204, noContent: true };
    const release = streamSlot(ctx, principal);
    return { status: 200, stream: (out) => followEval(ctx, id, from, out, release) };
  },
};
