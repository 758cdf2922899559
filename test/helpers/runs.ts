// Polls a run until it settles (ends, or parks waiting for approval) or reaches a status, within a bounded wait.
import type { TestService } from './service';

/** Where a run stays until something else happens: its end, or a wait for a decision on held calls. */
const SETTLED = ['succeeded', 'failed', 'refused', 'cancelled', 'awaiting_approval'];

async function waitFor<T extends { status: string }>(
  read: () => Promise<{ status: number; run?: T; error?: unknown }>,
  runId: string,
  timeoutMs: number,
  wanted: (status: string) => boolean = (status) => SETTLED.includes(status),
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { status, run, error } = await read();
    if (status !== 200 || !run) throw new Error(`run ${runId}: ${status} ${JSON.stringify(error)}`);
    if (wanted(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export function waitForAgentRun(t: TestService, runId: string, token?: string, timeoutMs = 5000) {
  return waitFor(agentRunReader(t, runId, token), runId, timeoutMs);
}

/** Polls an agent run until its status is `status`. */
export function waitForAgentRunStatus(t: TestService, runId: string, status: string, timeoutMs = 5000) {
  return waitFor(agentRunReader(t, runId), runId, timeoutMs, (s) => s === status);
}

function agentRunReader(t: TestService, runId: string, token?: string) {
  return async () => {
    const res = await t.client(token).GET('/api/build/runs/{runId}', { params: { path: { runId } } });
    return { status: res.response.status, run: res.data?.data, error: res.error };
  };
}

export function waitForWorkflowRun(t: TestService, runId: string, token?: string, timeoutMs = 5000) {
  return waitFor(workflowRunReader(t, runId, token), runId, timeoutMs);
}

/** Polls a workflow run until its status is `status`. */
export function waitForWorkflowRunStatus(t: TestService, runId: string, status: string, timeoutMs = 5000) {
  return waitFor(workflowRunReader(t, runId), runId, timeoutMs, (s) => s === status);
}

function workflowRunReader(t: TestService, runId: string, token?: string) {
  return async () => {
    const res = await t.client(token).GET('/api/build/workflow-runs/{runId}', { params: { path: { runId } } });
    return { status: res.response.status, run: res.data?.data, error: res.error };
  };
}

/** Runs `fn` with the workspace's balance set to `amount`, and puts a large balance back afterwards. */
export async function withCredits<T>(t: TestService, workspaceId: string, amount: number, fn: () => Promise<T>): Promise<T> {
  await t.service.store.workspaces.setCredits(workspaceId, amount);
  try {
    return await fn();
  } finally {
    await t.service.store.workspaces.setCredits(workspaceId, 1000);
  }
}
