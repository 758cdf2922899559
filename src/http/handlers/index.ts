// Every operation of openapi.yaml, keyed by operationId. The type makes a missing one an error.
import { agentHandlers } from './agents';
import { appHandlers } from './apps';
import { catalogHandlers } from './catalog';
import { evalDatasetHandlers } from './eval-datasets';
import { evalHandlers } from './evals';
import { eventEndpointHandlers } from './event-endpoints';
import { runControlHandlers } from './run-control';
import { runHandlers } from './runs';
import { skillHandlers } from './skills';
import type { Handlers } from './types';
import { versionHandlers } from './versions';
import { workflowHandlers } from './workflows';

export const handlers: Handlers = {
  ...agentHandlers,
  ...workflowHandlers,
  ...runHandlers,
  ...runControlHandlers,
  ...catalogHandlers,
  ...versionHandlers,
  ...appHandlers,
  ...skillHandlers,
  ...evalDatasetHandlers,
  ...evalHandlers,
  ...eventEndpointHandlers,
};
