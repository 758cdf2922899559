// Polls a run until it reaches a terminal status, within a bounded wait.
import type { TestService } from './service';

const TERMINAL = ['succeeded', 'failed', 'refused'];

export async function waitForAgentRun(t: TestService, runId: string, token?: string, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.client(token).GET('/api/build/runs/{runId}', { params: { path: { runId } } });
    if (res.response.status !== 200) throw new Error(`run ${runId}: ${res.response.status} ${JSON.stringify(res.error)}`);
    const run = res.data!.data;
    if (TERMINAL.includes(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function waitForWorkflowRun(t: TestService, runId: string, token?: string, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.client(token).GET('/api/build/workflow-runs/{runId}', { params: { path: { runId } } });
    if (res.response.status !== 200) throw new Error(`run ${runId}: ${res.response.status} ${JSON.stringify(res.error)}`);
    const run = res.data!.data;
    if (TERMINAL.includes(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
