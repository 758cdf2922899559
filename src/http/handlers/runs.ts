// Runs: their projections (test runs by their starter; runs triggers and schedules started by the
// workspace) and the lists of them, paged by cursor (the next page's link in `Link` too).
import * as runs from '../../services/runs';
import * as lists from '../../services/run-lists';
import { nextLink } from './next-link';
import type { Handlers } from './types';

export const runHandlers: Pick<Handlers, 'getAgentRun' | 'getWorkflowRun' | 'listAgentRuns' | 'listWorkflowRuns'> = {
  getAgentRun: async ({ ctx, principal, params }) => ({ status: 200, body: { data: await runs.getAgentRun(ctx, principal, params.runId) } }),
  getWorkflowRun: async ({ ctx, principal, params }) => ({
    status: 200,
    body: { data: await runs.getWorkflowRun(ctx, principal, params.runId) },
  }),
  listAgentRuns: async ({ ctx, principal, query }) => {
    const params = query as lists.ListParams;
    const page = await lists.listAgentRuns(ctx, principal, params);
    return { status: 200, headers: nextLink('/api/build/runs', params, page.nextCursor), rawBody: page.json };
  },
  listWorkflowRuns: async ({ ctx, principal, query }) => {
    const params = query as lists.ListParams;
    const page = await lists.listWorkflowRuns(ctx, principal, params);
    return { status: 200, headers: nextLink('/api/build/workflow-runs', params, page.nextCursor), rawBody: page.json };
  },
};
