// The kv app's events become runs (docs/triggers.md). A kv write records its event in its own
// transaction when a trigger of the workspace listens (store/port/kv.ts); any process claims the
// events waiting, under a lease, and starts the run of every trigger that fires for each. A process
// that stops mid-way leaves its claims to lapse: the next one dispatches again, and the (trigger,
// event id) row kept with each run makes that second dispatch start nothing already started.
import type { Logger } from '../log';
import type { PendingAppEvent } from '../store/port';
import { firingTrigger, fireTrigger, MAX_EVENT_CHAIN, rateLimitError, type AppEvent } from './app-events';
import type { ServiceContext } from './context';
import { periodicPass } from './periodic-pass';

/** How long a claim holds: an event not dispatched by then is another process's to take. */
const CLAIM_MS = 30_000;
/** Events claimed per pass, at most. */
const PER_PASS = 50;

export interface EventDispatch {
  /** Dispatches the events waiting now (the timer calls it; tests too). */
  dispatch(nowMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export function startEventDispatch(ctx: ServiceContext, opts: { intervalMs: number; logger: Logger }): EventDispatch {
  async function dispatchOne(pending: PendingAppEvent, nowMs: number): Promise<boolean> {
    const event: AppEvent = {
      workspaceId: pending.workspaceId,
      app: pending.app,
      event: pending.event,
      deliveryId: pending.id,
      payload: JSON.parse(pending.payload),
      chain: pending.chain,
    };
    const past = event.chain > MAX_EVENT_CHAIN;
    for (const listener of await ctx.store.appEvents.listeners(event.workspaceId, event.app)) {
      const agent = await ctx.store.agents.find(event.workspaceId, listener.agentId);
      const trigger = agent && firingTrigger(agent.document, listener, event, null);
      if (!agent || !trigger) continue;
      if (past) {
        const error = `a ${event.event} event ${event.chain} events down a chain started no run: kv events start runs at most ${MAX_EVENT_CHAIN} deep`;
        await ctx.store.appEvents.recordError(agent.id, trigger.id, error, new Date(nowMs).toISOString());
        continue;
      }
      // Past a trigger's rate the event waits for its claim to lapse, and is dispatched again then.
      const fired = await fireTrigger(ctx, agent, trigger, event, nowMs);
      if (fired.status === 'rate_limited') {
        await ctx.store.appEvents.recordError(agent.id, trigger.id, rateLimitError(ctx, fired.retryAfterSeconds), new Date(nowMs).toISOString());
        return false;
      }
    }
    return true;
  }

  const pass = async (nowMs: number): Promise<void> => {
    for (;;) {
      const claimed = await ctx.store.appEvents.claimPending(nowMs, nowMs + CLAIM_MS, PER_PASS);
      for (const pending of claimed) {
        if (await dispatchOne(pending, nowMs)) await ctx.store.appEvents.finishPending(pending.id);
      }
      if (claimed.length < PER_PASS) return;
    }
  };
  const passes = periodicPass(pass, { intervalMs: opts.intervalMs, logger: opts.logger, what: 'app event dispatch' });
  return { dispatch: passes.run, stop: passes.stop };
}
