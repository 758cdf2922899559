// Waiting for a run to leave queued and running, for a reader that would otherwise poll (the MCP
// run reads' `wait_seconds`). A wait follows the run's stored events as an event stream does (one
// shared reader per run, runEvents), takes one of the caller's stream slots while it lasts (the
// same bound as streams: EVENT_STREAMS_PER_CALLER), and ends when an event shows the run has left
// those states, when the time passes, or when the caller goes away.
import type { RunKind, RunStatus } from '../store/port';
import type { Principal, ServiceContext } from './context';
import { findRun } from './runs';
import { isFinal, streamSlot, streamStart } from './run-events';

const ACTIVE: ReadonlySet<RunStatus> = new Set(['queued', 'running']);

/**
 * Resolves when run `runId` is neither queued nor running, or after `seconds`, or when `signal`
 * aborts; 404 as the run's read when `who` may not read it, 429 when the caller's stream slots are
 * all taken. What the run is then is for the caller to read.
 */
export async function waitWhileActive(ctx: ServiceContext, who: Principal, runId: string, kind: RunKind, seconds: number, signal?: AbortSignal): Promise<void> {
  if (seconds <= 0 || signal?.aborted) return;
  const run = await findRun(ctx, who, runId, kind);
  if (!ACTIVE.has(run.status)) return;
  const release = streamSlot(ctx, who);
  try {
    await untilInactive(ctx, run.id, seconds * 1000, signal);
  } finally {
    release();
  }
}

/**
 * Resolves when run `runId` is neither queued nor running (or gone), after `ms`, or when `signal`
 * aborts: the wait itself, for a caller that checked it may read the run (a reader, or the run
 * that started it).
 */
export async function untilInactive(ctx: ServiceContext, runId: string, ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return;
  // From the last event on (null: the run has ended), then the status again: a change after that
  // read comes with an event after `from`, which the subscription delivers.
  const from = await streamStart(ctx, runId, Number.MAX_SAFE_INTEGER);
  if (from === null || !(await stillActive(ctx, runId))) return;
  await new Promise<void>((resolve) => {
    let settled = false;
    let checking = false;
    let unsubscribe = () => {};
    const done = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      unsubscribe();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done);
    // Any event may be the run's leaving `running` (to awaiting_approval, say): read its status
    // again, once at a time; the final event ends it outright.
    unsubscribe = ctx.runEvents.subscribe(
      runId,
      from,
      (rows) => {
        if (rows.some(isFinal)) return done();
        if (checking) return;
        checking = true;
        stillActive(ctx, runId)
          .then((active) => {
            if (!active) done();
          })
          .catch(done)
          .finally(() => (checking = false));
      },
      done,
    );
  });
}

async function stillActive(ctx: ServiceContext, runId: string): Promise<boolean> {
  const run = await ctx.store.runs.find(runId);
  return !!run && ACTIVE.has(run.status);
}
