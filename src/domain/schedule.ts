// Cron expressions and timezones, checked with a maintained parser (croner) and the runtime's IANA
// zone database (Intl) rather than by hand.
import { Cron } from 'croner';
import { boundedMemo } from './bounded-memo';

/** Verdicts remembered: documents reuse a handful of expressions and zones; callers may send any string. */
const VERDICTS_KEPT = 1000;

/** Why a cron expression is unusable, or null. Five fields; names and `@daily`-style macros allowed. */
export const cronProblem = boundedMemo(judgeCron, VERDICTS_KEPT);

function judgeCron(expression: string): string | null {
  const text = expression.trim();
  if (!text.startsWith('@') && text.split(/\s+/).length !== 5) {
    return 'must be a cron expression of 5 fields (minute hour day-of-month month day-of-week) or a macro such as @daily';
  }
  let cron: Cron;
  try {
    cron = new Cron(text, { paused: true, timezone: 'UTC' });
  } catch (err) {
    return `is not a valid cron expression (${(err as Error).message.replace(/^CronPattern: /, '')})`;
  }
  try {
    if (!cron.nextRun()) return 'never fires (no date matches it)';
  } finally {
    cron.stop();
  }
  return null;
}

/** Whether `zone` names a timezone of the IANA database (canonical names and their aliases). */
export const isTimezone = boundedMemo(judgeTimezone, VERDICTS_KEPT);

function judgeTimezone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    // Intl also takes offsets such as "+01:00"; an IANA name has letters.
    return /[A-Za-z]/.test(zone);
  } catch {
    return false;
  }
}

/** A paused croner job per (zone, expression): it only answers "when next". */
const jobs = boundedMemo((key: string) => {
  const [timezone, expression] = key.split('\n') as [string, string];
  return new Cron(expression.trim(), { paused: true, timezone });
}, VERDICTS_KEPT);

/**
 * The first due time of `cron` in `timezone` strictly after `afterMs` (ms since the epoch), or null
 * when there is none. Daylight saving time is croner's: a local time the clocks skip (02:30 on the
 * spring-forward night in Europe/Berlin) fires at the first valid time after the gap (03:00), once;
 * a local time the clocks repeat (02:30 on the fall-back night) fires at its first occurrence only;
 * interval expressions (`*\/30 * * * *`) follow absolute time, so they fire through both hours.
 */
export function nextDueAfter(cron: string, timezone: string, afterMs: number): number | null {
  const next = jobs(`${timezone}\n${cron}`).nextRun(new Date(afterMs));
  return next ? next.getTime() : null;
}

/** `firstDueMs` and every later due time up to `nowMs` inclusive, ascending, at most `max` of them (the latest kept). */
export function dueTimesThrough(cron: string, timezone: string, firstDueMs: number, nowMs: number, max: number): number[] {
  const times: number[] = [];
  for (let t: number | null = firstDueMs; t !== null && t <= nowMs; t = nextDueAfter(cron, timezone, t)) {
    times.push(t);
    if (times.length > max) times.shift();
  }
  return times;
}

export interface FirePlan {
  /** The due time to fire now, or null. */
  fire: number | null;
  /** Due times that were missed: recorded as skipped. */
  missed: number[];
}

/**
 * What to do with the due times that have come (ascending): the latest fires if it is within the
 * catch-up window of now; every other one was missed (the service was down, or busy) and is recorded
 * as skipped. So a long outage costs one catch-up run, never a burst.
 */
export function planFires(due: number[], nowMs: number, catchUpMs: number): FirePlan {
  if (!due.length) return { fire: null, missed: [] };
  const latest = due[due.length - 1] as number;
  if (nowMs - latest > catchUpMs) return { fire: null, missed: due };
  return { fire: latest, missed: due.slice(0, -1) };
}
