// Run projections (the run queue lands with its own issue).
import { notImplemented } from '../../errors';
import type { Handlers } from './types';

export const runHandlers: Pick<Handlers, 'getAgentRun' | 'getWorkflowRun'> = {
  getAgentRun: async () => {
    throw notImplemented();
  },
  getWorkflowRun: async () => {
    throw notImplemented();
  },
};
