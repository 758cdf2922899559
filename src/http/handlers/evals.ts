// Eval operations (docs/evals.md): read the validated request, call the service, shape the reply.
import * as evals from '../../services/evals';
import { nextLink } from './next-link';
import type { Handlers } from './types';

export const evalHandlers: Pick<Handlers, 'startEval' | 'listAgentEvals' | 'getEval' | 'compareEvals'> = {
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
};
