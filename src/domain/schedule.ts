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
