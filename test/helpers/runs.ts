// Polls a run until it reaches a terminal status, within a bounded wait.
import type { TestService } from './service';

const TERMINAL = ['succeeded', 'failed', 'refused', 'cancelled', 'awaiting_approval'];

async function waitFor<T extends { status: string }>(read: () => Promise<{ status: number; run?: T; error?: unknown }>, runId: string, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { status, run, error } = await read();
    if (status !== 200 || !run) throw new Error(`run ${runId}: ${status} ${JSON.stringify(error)}`);
    if (TERMINAL.includes(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export function waitForAgentRun(t: TestService, runId: string, token?: string, timeoutMs = 5000) {
  return waitFor(async () => {
    const res = await t.client(token).GET('/api/build/runs/{runId}', { params: { path: { runId } } });
    return { status: res.response.status, run: res.data?.data, error: res.error };
  }, runId, timeoutMs);
}

export function waitForWorkflowRun(t: TestService, runId: string, token?: string, timeoutMs = 5000) {
  return waitFor(async () => {
    const res = await t.client(token).GET('/api/build/workflow-runs/{runId}', { params: { path: { runId } } });
    return { status: res.response.status, run: res.data?.data, error: res.error };
  }, runId, timeoutMs);
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
