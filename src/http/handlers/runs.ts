// Run projections: only the user who started a run can read it.
import * as runs from '../../services/runs';
import type { Handlers } from './types';

export const runHandlers: Pick<Handlers, 'getAgentRun' | 'getWorkflowRun'> = {
  getAgentRun: async ({ ctx, principal, params }) => ({ status: 200, body: { data: await runs.getAgentRun(ctx, principal, params.runId) } }),
  getWorkflowRun: async ({ ctx, principal, params }) => ({
    status: 200,
    body: { data: await runs.getWorkflowRun(ctx, principal, params.runId) },
  }),
};
