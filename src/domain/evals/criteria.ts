// An agent's `eval_criteria` and a dataset case's extra criteria (docs/evals.md): rubrics (strings)
// and typed checks. Each criterion has an id: its own, or one derived from its content, so that an
// unchanged criterion is the same criterion in two versions (comparisons match criteria by id).
// The write-time rules beyond the JSON schema: ids unique, patterns and schemas the linear-time
// engines take, tools that exist.
import { createHash } from 'node:crypto';
import type { EvalCheck, EvalCriterion, Problem } from '../types';
import { schemaValidator } from './json-schema-check';
import { compileLinear } from './linear-regex';

/** The threshold of a judged criterion that names none (a rubric's always). */
export const DEFAULT_JUDGE_THRESHOLD = 0.5;

/** A criterion as graded: its id and its check (a rubric is a judge check). */
export interface Criterion {
  id: string;
  check: EvalCheck;
}

/** JSON with members in code-point order at every level: the same value always gives the same text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The id of a criterion: its `id`, or `c_` and 10 hex characters of its canonical JSON's SHA-256. */
export function criterionId(criterion: EvalCriterion): string {
  if (typeof criterion === 'object' && criterion.id !== undefined) return criterion.id;
  return `c_${createHash('sha256').update(canonicalJson(criterion)).digest('hex').slice(0, 10)}`;
}

/** The criterion as graded. */
export function asCriterion(criterion: EvalCriterion): Criterion {
  const check: EvalCheck = typeof criterion === 'string' ? { type: 'judge', rubric: criterion, threshold: DEFAULT_JUDGE_THRESHOLD } : criterion;
  return { id: criterionId(criterion), check };
}

/** Whether a tool slug names a tool an agent can have: `known` (the catalog's), or one of an agent's own. */
export type ToolNames = (slug: string) => boolean;

const OWN_TOOLS = ['workflows.', 'skills.'];
const isOwnTool = (slug: string): boolean => OWN_TOOLS.some((prefix) => slug.startsWith(prefix) && slug.length > prefix.length);

function checkTool(slug: string, path: string, known: ToolNames, problems: Problem[]): void {
  if (known(slug) || isOwnTool(slug)) return;
  problems.push({
    path,
    message: `'${slug}' is not a tool of the catalog nor an agent's own (workflows.<slug>, skills.load, skills.file); GET /api/build/catalog/apps/{app} lists an app's tools`,
  });
}

/** The problems of one typed check beyond its schema. */
function checkOne(check: EvalCheck, path: string, known: ToolNames, problems: Problem[]): void {
  switch (check.type) {
    case 'regex': {
      const compiled = compileLinear(check.pattern, check.ignore_case);
      if ('problem' in compiled) problems.push({ path: `${path}.pattern`, message: compiled.problem });
      return;
    }
    case 'json_schema': {
      const validator = schemaValidator(check.schema);
      if ('problem' in validator) problems.push({ path: `${path}.schema`, message: validator.problem });
      return;
    }
    case 'tool_called':
    case 'tool_not_called':
    case 'tool_args_match':
      checkTool(check.tool, `${path}.tool`, known, problems);
      return;
    case 'tool_sequence':
      for (const [i, slug] of check.tools.entries()) checkTool(slug, `${path}.tools[${i}]`, known, problems);
      return;
    default:
      return;
  }
}

/**
 * The problems of a list of criteria at `path` (such as `body.eval_criteria`): each typed check's,
 * and an id used twice (given, or derived: the same criterion twice).
 */
export function checkCriteria(criteria: readonly EvalCriterion[], path: string, known: ToolNames, problems: Problem[]): void {
  const seen = new Map<string, number>();
  criteria.forEach((criterion, i) => {
    const at = `${path}[${i}]`;
    const id = criterionId(criterion);
    const first = seen.get(id);
    if (first !== undefined)
      problems.push({
        path: at,
        message: `its id '${id}' is also that of ${path}[${first}] (ids are unique; an unnamed criterion's id comes from its content)`,
      });
    seen.set(id, first ?? i);
    if (typeof criterion !== 'string') checkOne(criterion, at, known, problems);
  });
}
