// The event subscriptions' settings (docs/events.md): how many endpoints a workspace may have, and
// how deliveries are attempted, retried, given up and kept.
import { ConfigError, integer, type Env } from './config-values';

export interface EventConfig {
  /** Endpoints one workspace may have (EVENT_ENDPOINTS_PER_WORKSPACE). */
  endpointsPerWorkspace: number;
  /** The most one attempt may take, connect to last byte read (EVENT_DELIVERY_TIMEOUT_SECONDS). */
  timeoutMs: number;
  /** The delays before each retry, after the failure before it (EVENT_RETRY_SCHEDULE_SECONDS); its length is the retries. */
  retryScheduleMs: number[];
  /** An endpoint whose attempts all failed for this long is disabled (EVENT_ENDPOINT_DISABLE_AFTER_HOURS). */
  disableAfterMs: number;
  /** Ended deliveries and their events are deleted this long after their last attempt (EVENT_RETENTION_DAYS). */
  retentionMs: number;
  /** Attempts one endpoint may have under way in one process (EVENT_DELIVERIES_PER_ENDPOINT). */
  perEndpoint: number;
  /** Attempts one process makes at once (EVENT_DELIVERY_CONCURRENCY); 0: it sends none (its replicas do). */
  concurrency: number;
  /** How often a process looks for deliveries due (EVENT_DELIVERY_POLL_MS). */
  pollMs: number;
}

/** Svix's and Standard Webhooks' schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (about 27.6 hours in all). */
export const DEFAULT_RETRY_SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];

export function eventConfig(env: Env): EventConfig {
  return {
    endpointsPerWorkspace: integer(env, 'EVENT_ENDPOINTS_PER_WORKSPACE', 10, 1, 1000),
    timeoutMs: integer(env, 'EVENT_DELIVERY_TIMEOUT_SECONDS', 10, 1, 60) * 1000,
    retryScheduleMs: retrySchedule(env).map((s) => s * 1000),
    disableAfterMs: integer(env, 'EVENT_ENDPOINT_DISABLE_AFTER_HOURS', 120, 1, 8760) * 3_600_000,
    retentionMs: integer(env, 'EVENT_RETENTION_DAYS', 30, 1, 3650) * 86_400_000,
    perEndpoint: integer(env, 'EVENT_DELIVERIES_PER_ENDPOINT', 4, 1, 100),
    concurrency: integer(env, 'EVENT_DELIVERY_CONCURRENCY', 32, 0, 1000),
    pollMs: integer(env, 'EVENT_DELIVERY_POLL_MS', 100, 10, 10_000),
  };
}

/** EVENT_RETRY_SCHEDULE_SECONDS: whole seconds, comma-separated, at most 20 of them, each at most a week; empty: no retry. */
function retrySchedule(env: Env): number[] {
  const raw = env.EVENT_RETRY_SCHEDULE_SECONDS;
  if (raw === undefined) return DEFAULT_RETRY_SCHEDULE_SECONDS;
  const parts = raw.trim() === '' ? [] : raw.split(',').map((s) => s.trim());
  const rule = 'must be whole seconds (each at most 604800), comma-separated, at most 20';
  if (parts.length > 20 || parts.some((p) => !/^\d{1,6}$/.test(p) || Number(p) > 604_800)) {
    throw new ConfigError(`EVENT_RETRY_SCHEDULE_SECONDS: ${rule}, got '${raw}'`);
  }
  return parts.map(Number);
}
