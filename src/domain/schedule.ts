// Cron expressions and timezones, checked with a maintained parser (croner) and the runtime's IANA
// zone database (Intl) rather than by hand.
import { Cron } from 'croner';

const cronVerdicts = new Map<string, string | null>();

/** Why a cron expression is unusable, or null. Five fields; names and `@daily`-style macros allowed. */
export function cronProblem(expression: string): string | null {
  let verdict = cronVerdicts.get(expression);
  if (verdict === undefined) {
    verdict = judgeCron(expression);
    if (cronVerdicts.size >= 10_000) cronVerdicts.clear(); // documents reuse a handful of expressions
    cronVerdicts.set(expression, verdict);
  }
  return verdict;
}

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

const knownZones = new Map<string, boolean>();

/** Whether `zone` names a timezone of the IANA database (canonical names and their aliases). */
export function isTimezone(zone: string): boolean {
  let known = knownZones.get(zone);
  if (known === undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: zone });
      // Intl also takes offsets such as "+01:00"; an IANA name has letters.
      known = /[A-Za-z]/.test(zone);
    } catch {
      known = false;
    }
    knownZones.set(zone, known);
  }
  return known;
}
