// A real SQLite store in a temporary directory, and runs queued in it as an accepted run is, for
// the unit tests of the runner's parts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { NewRun, Store } from '../../src/store/port';
import { openSqliteStore } from '../../src/store/sqlite';
import type { QueuedRun } from '../../src/runtime/runner';
import { initialAgentState } from '../../src/runtime/agent-loop';
import { initialWorkflowState } from '../../src/runtime/workflow-executor';
import type { Agent, Workflow } from '../../src/domain/types';
import { minimalAgent } from './fixtures';

export interface TempStore {
  store: Store;
  close(): Promise<void>;
}

export function openTempStore(): TempStore {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-runner-'));
  const store = openSqliteStore(path.join(dir, 'build.db'));
  return {
    store,
    close: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

let counter = 0;
/** A run id that sorts after the ones made before it (the queue is served oldest first). */
export const nextRunId = () => `00000000-0000-4000-8000-${String(++counter).padStart(12, '0')}`;

/** A workflow of tool steps, one after the other when `chained`. */
export function toolWorkflow(steps: { id: string; tool: string; args?: Record<string, unknown> }[], chained = true): Workflow {
  return {
    kind: 'service.workflow/v1',
    slug: 'w',
    name: 'W',
    description: null,
    enabled: true,
    updated_at: '',
    space: { team: null },
    send_as: null,
    inputs: {},
    schedule: null,
    output: null,
    steps: steps.map((s, i) => ({ id: s.id, kind: 'tool', tool: s.tool, args: s.args ?? {}, after: chained && i > 0 ? [steps[i - 1]!.id] : [] })),
  } as unknown as Workflow;
}

/** An agent of the scripted model: its instructions' `/call` lines are its tool calls. */
export function scriptedAgent(overrides: Partial<Agent> = {}): Agent {
  return {
    ...minimalAgent('Scripted'),
    id: 'agent-1',
    slug: 'scripted',
    status: 'active',
    updated_at: '',
    reasoning_effort: null,
    max_steps: 4,
    ...overrides,
  } as unknown as Agent;
}

export interface QueueOptions {
  workspaceId?: string;
  /** Credits reserved on acceptance (default: one per workflow step, 1 for an agent). */
  minimumCost?: number;
  /** The balance of a workspace seen for the first time (default 100). */
  initialCredits?: number;
  /** The agent run's prompt (default 'hi'). */
  prompt?: string;
  /** A worker the acceptance claims the run for (NewRun.claim). */
  claim?: NewRun['claim'];
}

/** Queues a run of `target` (a workflow, or an agent) as an accepted run is, and returns it as handed over. */
export async function queueRun(store: Store, target: Workflow | Agent, opts: QueueOptions = {}): Promise<QueuedRun> {
  const id = nextRunId();
  const workspaceId = opts.workspaceId ?? 'ws-1';
  const isWorkflow = target.kind === 'service.workflow/v1';
  const state = isWorkflow ? initialWorkflowState(target as Workflow) : initialAgentState();
  const request = isWorkflow ? { input: {} } : { prompt: opts.prompt ?? 'hi' };
  const minimumCost = opts.minimumCost ?? (isWorkflow ? (target as Workflow).steps.length : 1);
  const outcome = await store.runs.accept(
    {
      id,
      kind: isWorkflow ? 'workflow' : 'agent',
      workspaceId,
      startedBy: 'user-1',
      targetId: 'target-1',
      targetVersion: 1,
      source: 'test',
      request,
      snapshotJson: JSON.stringify(target),
      state,
      minimumCost,
      initialCredits: opts.initialCredits ?? 100,
      ...(!isWorkflow && { agent: { slug: (target as Agent).slug, name: target.name } }),
      ...(opts.claim && { claim: opts.claim }),
    },
    () => 'refused',
  );
  if (outcome.status !== 'queued') throw new Error(`run not queued: ${outcome.status}`);
  return {
    id,
    kind: isWorkflow ? 'workflow' : 'agent',
    workspaceId,
    snapshot: target,
    request,
    state,
    startedBy: 'user-1',
    visibleTo: null,
    creditsReserved: minimumCost,
    creditsSpent: 0,
    source: 'test',
    acceptedAt: (await store.runs.find(id))!.accepted_at,
    traceParent: null,
  };
}

/** Queues a run and claims it under `lease`, as a worker does before it executes it. */
export async function claimedRun(store: Store, run: Promise<QueuedRun>, lease: { owner: string; ms: number }): Promise<QueuedRun> {
  const queued = await run;
  expect(await store.runs.claim(queued.id, lease, 8)).toBe(true);
  return queued;
}
