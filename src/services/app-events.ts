// What an app's event does (docs/triggers.md): every enabled app_event trigger of an active agent
// that listens to it starts one run. The event's id is recorded with each run in the run's own
// transaction, keyed by (trigger, id), so a repeat of the event (an app's retry, copies arriving at
// two replicas, a second dispatch of a kv event) starts nothing for a trigger that has its run.
import crypto from 'node:crypto';
import { eventMatches } from '../domain/catalog';
import type { Agent, Trigger } from '../domain/types';
import type { AgentRecord, EventListener } from '../store/port';
import type { components } from '../../generated/api';
import { agentRun } from './run-builders';
import type { ServiceContext } from './context';
import { acceptRun } from './runs';

/** How long an event's id is kept with its runs: a repeat within it starts nothing (at least the 7 days apps retry for). */
export const EVENT_KEPT_MS = 8 * 24 * 60 * 60 * 1000;

/** The payload a run receives whole, as JSON; a larger one reaches it as its SHA-256 and size. */
export const EVENT_PAYLOAD_IN_RUN_BYTES = 16 * 1024;

/**
 * How many kv events may lead one to another: a run started by a kv event that writes a key emits
 * an event one further along the chain, and an event this far along starts no run.
 */
export const MAX_EVENT_CHAIN = 3;

export type AppEventTrigger = Extract<Trigger, { kind: 'app_event' }>;
export type StartedRun = components['schemas']['AppEventAcceptedResponse']['data']['runs'][number];

export interface AppEvent {
  workspaceId: string;
  app: string;
  event: string;
  /** The id the app gave it (the same on every retry), or the kv event's own. */
  deliveryId: string;
  payload: unknown;
  /** The chain position of the runs it starts (1 for an event no event-started run caused). */
  chain: number;
}

/** The run's input: what happened, where, and the payload (or, past its bound, the payload's hash and size). */
export function eventInput(event: AppEvent, trigger: AppEventTrigger): Record<string, unknown> {
  const json = JSON.stringify(event.payload) ?? 'null';
  const bytes = Buffer.byteLength(json);
  const whole = bytes <= EVENT_PAYLOAD_IN_RUN_BYTES;
  return {
    app: event.app,
    event: event.event,
    connection: trigger.connection,
    delivery_id: event.deliveryId,
    chain: event.chain,
    payload_bytes: bytes,
    ...(whole ? { payload: event.payload } : { payload: null, payload_sha256: crypto.createHash('sha256').update(json).digest('hex') }),
  };
}

function eventPrompt(event: AppEvent, trigger: AppEventTrigger, input: Record<string, unknown>): string {
  const intro = trigger.prompt ?? `The event '${event.event}' of app '${event.app}' arrived at the trigger '${trigger.name}'.`;
  return `${intro}\n\nApp event:\n${JSON.stringify(input)}`;
}

/** The trigger of `agent` that `listener` names, when it fires for `event` now (its agent active, it enabled, the event its own). */
export function firingTrigger(agent: Agent, listener: EventListener, event: AppEvent, connection: string | null): AppEventTrigger | null {
  if (agent.status !== 'active') return null;
  const trigger = agent.triggers.find((t) => t.id === listener.triggerId);
  if (trigger?.kind !== 'app_event' || !trigger.enabled || trigger.app !== event.app) return null;
  if (connection !== null && trigger.connection !== connection) return null;
  if (!eventMatches(trigger.event, event.event)) return null;
  const key = (event.payload as { key?: unknown } | null)?.key;
  if (trigger.key_prefix && !(typeof key === 'string' && key.startsWith(trigger.key_prefix))) return null;
  return trigger;
}

/** A trigger's last_error when its rate refused an event (the event is started on the app's retry, or the next dispatch). */
export const rateLimitError = (ctx: Pick<ServiceContext, 'webhookRatePerMinute'>, retryAfterSeconds: number) =>
  `the trigger received ${ctx.webhookRatePerMinute} events this minute, its limit (WEBHOOK_RATE_LIMIT); the next one starts in ${retryAfterSeconds} s at the earliest`;

export type FireOutcome = { status: 'started' | 'repeated'; run: StartedRun } | { status: 'rate_limited'; retryAfterSeconds: number };

/** Starts the run of `trigger` for `event`, unless it has one for the event already (then that run). */
export async function fireTrigger(ctx: ServiceContext, agent: AgentRecord, trigger: AppEventTrigger, event: AppEvent, nowMs: number): Promise<FireOutcome> {
  const input = eventInput(event, trigger);
  const minute = Math.floor(nowMs / 60_000);
  const { id, outcome } = await acceptRun(
    ctx,
    agentRun(
      agent,
      { prompt: eventPrompt(event, trigger, input), input, event_chain: event.chain },
      {
        workspaceId: event.workspaceId,
        startedBy: `app_event:${trigger.id}`,
        source: 'app_event',
        triggerId: trigger.id,
        delivery: { key: event.deliveryId.slice(0, 200), since: new Date(nowMs - EVENT_KEPT_MS).toISOString() },
        rate: { window: minute, limit: ctx.webhookRatePerMinute },
      },
    ),
  );
  const started = (runId: string, status: StartedRun['status']) => ({ trigger_id: trigger.id, agent: agent.slug, run_id: runId, status });
  switch (outcome.status) {
    case 'repeated': {
      const runId = outcome.runId!; // a delivery's repeat names its run
      const run = await ctx.store.runs.find(runId);
      return { status: 'repeated', run: started(runId, (run?.status ?? 'queued') as StartedRun['status']) };
    }
    case 'rate_limited':
      return { status: 'rate_limited', retryAfterSeconds: Math.max(1, Math.ceil(((minute + 1) * 60_000 - nowMs) / 1000)) };
    case 'refused':
      return { status: 'started', run: started(id, 'refused') };
    default:
      return { status: 'started', run: started(id, 'queued') };
  }
}
