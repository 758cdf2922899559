// The typed checks that need no model (docs/evals.md), graded from what a run recorded: its status,
// final text, tool calls, steps and credits. Pure and bounded: text checks scan the final text once
// (`regex` and the `pattern`s of `json_schema` by RE2, in linear time), tool checks walk the calls
// once. A run with no final text fails the text checks (`not_contains` passes: nothing was said).
// RE2 in JavaScript reads about 3 MB a second at worst, and a final text may be 1 MiB: a `regex` reads
// the first PATTERN_CHARS characters, and a `json_schema` check takes a text no longer, so one check
// holds the event loop some 20 ms at most (the grader yields between checks).
import type { EvalCheck } from '../types';
import { parseJsonWithin, NOT_JSON } from '../json-limits';
import { schemaValidator } from './json-schema-check';
import { compileLinear } from './linear-regex';

/** What a run recorded that the checks read. */
export interface RunFacts {
  status: string;
  finalText: string | null;
  toolCalls: readonly { tool: string; args: unknown }[];
  steps: number | null;
  credits: number | null;
}

export type Outcome = 'passed' | 'failed' | 'errored' | 'skipped';

/** One criterion's grade: its outcome, a score from 0 to 1 (null when ungraded), why, and by what (null: nothing graded it). */
export interface Grade {
  outcome: Outcome;
  score: number | null;
  reason: string;
  grader: string | null;
}

export type DeterministicCheck = Exclude<EvalCheck, { type: 'judge' }>;

/** At most this much of a value is quoted in a reason. */
const QUOTED = 80;
const quote = (text: string): string => JSON.stringify(text.length > QUOTED ? `${text.slice(0, QUOTED)}…` : text);

/** The most of the final text a `regex` reads, and the longest a `json_schema` check takes. */
export const PATTERN_CHARS = 65_536;

const verdict = (passed: boolean, reason: string, grader: string): Grade => ({ outcome: passed ? 'passed' : 'failed', score: passed ? 1 : 0, reason, grader });
const NO_TEXT = 'the run has no final text';

function textCheck(check: DeterministicCheck & { type: 'contains' | 'not_contains' | 'equals' }, text: string): Grade {
  const fold = (s: string) => (check.ignore_case ? s.toLowerCase() : s);
  if (check.type === 'equals') {
    const equal = fold(text.trim()) === fold(check.value);
    return verdict(equal, equal ? 'the final text is the value' : `the final text is ${quote(text.trim())}, not ${quote(check.value)}`, 'equals');
  }
  const found = fold(text).includes(fold(check.value));
  const says = found ? `the final text contains ${quote(check.value)}` : `the final text does not contain ${quote(check.value)}`;
  return verdict(found === (check.type === 'contains'), says, check.type);
}

function jsonCheck(check: DeterministicCheck & { type: 'is_json' | 'json_schema' }, text: string): Grade {
  if (check.type === 'json_schema' && text.length > PATTERN_CHARS) {
    return verdict(false, `the final text is ${text.length} characters; a json_schema check reads at most ${PATTERN_CHARS}`, 'json_schema');
  }
  const value = parseJsonWithin(text.trim());
  if (value === NOT_JSON) return verdict(false, 'the final text is not JSON', check.type);
  if (check.type === 'is_json') return verdict(true, 'the final text is JSON', 'is_json');
  const validate = schemaValidator(check.schema);
  // A schema the write accepted compiles; one that no longer does (an engine's change) is not a pass.
  if ('problem' in validate) return { outcome: 'errored', score: null, reason: `the schema ${validate.problem}`, grader: 'json_schema' };
  if (validate(value)) return verdict(true, 'the final text is JSON the schema accepts', 'json_schema');
  const first = validate.errors?.[0];
  return verdict(false, `the schema refuses the final text: ${first ? `${first.instancePath || '/'} ${first.message}` : 'invalid'}`, 'json_schema');
}

/** Whether `actual` matches `wanted`: exactly (equal as JSON), or partially (objects member by member). */
export function argsMatch(wanted: unknown, actual: unknown, partial: boolean): boolean {
  if (wanted === null || typeof wanted !== 'object' || actual === null || typeof actual !== 'object') return wanted === actual;
  if (Array.isArray(wanted) || Array.isArray(actual)) {
    if (!Array.isArray(wanted) || !Array.isArray(actual) || wanted.length !== actual.length) return false;
    return wanted.every((item, i) => argsMatch(item, actual[i], false));
  }
  const have = actual as Record<string, unknown>;
  const keys = Object.keys(wanted);
  if (!partial && keys.length !== Object.keys(have).length) return false;
  return keys.every((key) => Object.hasOwn(have, key) && argsMatch((wanted as Record<string, unknown>)[key], have[key], partial));
}

/** Whether `tools` appear in `calls` in order (other calls between them allowed), or are exactly the calls when `strict`. */
function inSequence(tools: readonly string[], calls: readonly string[], strict: boolean): boolean {
  if (strict) return tools.length === calls.length && tools.every((tool, i) => calls[i] === tool);
  let next = 0;
  for (const call of calls) if (next < tools.length && call === tools[next]) next++;
  return next === tools.length;
}

function toolCheck(check: DeterministicCheck & { type: 'tool_called' | 'tool_not_called' | 'tool_args_match' | 'tool_sequence' }, run: RunFacts): Grade {
  const called = run.toolCalls.map((c) => c.tool);
  switch (check.type) {
    case 'tool_called':
    case 'tool_not_called': {
      const times = called.filter((tool) => tool === check.tool).length;
      return verdict(times > 0 === (check.type === 'tool_called'), `the run called ${check.tool} ${times} time${times === 1 ? '' : 's'}`, check.type);
    }
    case 'tool_args_match': {
      const partial = check.match !== 'exact';
      const calls = run.toolCalls.filter((c) => c.tool === check.tool);
      const matched = calls.some((c) => argsMatch(check.args, c.args, partial));
      const says = matched
        ? `a call of ${check.tool} had matching arguments`
        : `none of the run's ${calls.length} call${calls.length === 1 ? '' : 's'} of ${check.tool} had matching arguments (${partial ? 'partial' : 'exact'})`;
      return verdict(matched, says, 'tool_args_match');
    }
    case 'tool_sequence': {
      const ok = inSequence(check.tools, called, check.strict === true);
      return verdict(ok, ok ? 'the run called the tools in order' : `the run's calls were ${quote(called.join(', ') || 'none')}`, 'tool_sequence');
    }
  }
}

/** The grade of a deterministic check of one run. */
export function gradeDeterministic(check: DeterministicCheck, run: RunFacts): Grade {
  switch (check.type) {
    case 'contains':
    case 'not_contains':
    case 'equals':
      if (run.finalText === null) return verdict(check.type === 'not_contains', NO_TEXT, check.type);
      return textCheck(check, run.finalText);
    case 'regex': {
      if (run.finalText === null) return verdict(false, NO_TEXT, 'regex');
      const compiled = compileLinear(check.pattern, check.ignore_case);
      if ('problem' in compiled) return { outcome: 'errored', score: null, reason: `the pattern ${compiled.problem}`, grader: 'regex' };
      const cut = run.finalText.length > PATTERN_CHARS;
      const found = compiled.test(cut ? run.finalText.slice(0, PATTERN_CHARS) : run.finalText);
      const read = cut ? `its first ${PATTERN_CHARS} characters` : 'the final text';
      return verdict(found, found ? `the pattern matches ${read}` : `the pattern matches nowhere in ${read}`, 'regex');
    }
    case 'is_json':
    case 'json_schema':
      if (run.finalText === null) return verdict(false, NO_TEXT, check.type);
      return jsonCheck(check, run.finalText);
    case 'tool_called':
    case 'tool_not_called':
    case 'tool_args_match':
    case 'tool_sequence':
      return toolCheck(check, run);
    case 'max_steps':
      return verdict((run.steps ?? 0) <= check.value, `the run took ${run.steps ?? 0} step${run.steps === 1 ? '' : 's'} (at most ${check.value})`, 'max_steps');
    case 'max_credits':
      return verdict((run.credits ?? 0) <= check.value, `the run spent ${run.credits ?? 0} credits (at most ${check.value})`, 'max_credits');
    case 'run_status':
      return verdict(run.status === check.status, `the run ended ${run.status}`, 'run_status');
  }
}
