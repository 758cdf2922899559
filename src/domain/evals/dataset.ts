// Eval datasets (docs/evals.md): the cases an eval runs an agent over. The rules beyond the schema,
// the document as stored, and what a case asks of the agent (its prompt, variables filled in, then
// its input). Datasets are the whole workspace's, as skills are (domain/spaces.ts).
import type { EvalCase, EvalDataset, EvalDatasetCreate, Problem } from '../types';
import { checkCriteria, type ToolNames } from './criteria';

export const DATASETS_PER_WORKSPACE = 100;
/** The most bytes a dataset may take as stored (its JSON): 200 cases of a few KiB each. */
export const DATASET_STORED_BYTES = 512 * 1024;
/** The most bytes a dataset's create or replace body may have (it carries its cases). */
export const DATASET_REQUEST_BYTES = 1024 * 1024;
/** The longest a case's prompt may be once its variables are filled in and its input added: what one run is asked. */
export const CASE_PROMPT_CHARS = 32_000;

/** The problems of a dataset's cases: ids unique, each asking something, their criteria by the rules of `eval_criteria`. */
export function datasetProblems(input: Pick<EvalDatasetCreate, 'cases'>, known: ToolNames): Problem[] {
  const problems: Problem[] = [];
  const seen = new Map<string, number>();
  input.cases.forEach((c, i) => {
    const at = `body.cases[${i}]`;
    const first = seen.get(c.id);
    if (first !== undefined) problems.push({ path: `${at}.id`, message: `'${c.id}' is also the id of body.cases[${first}]; case ids are unique` });
    else seen.set(c.id, i);
    if (c.prompt === undefined && c.input === undefined) problems.push({ path: at, message: 'has neither prompt nor input; a case asks the agent something' });
    else if (casePrompt(c).length > CASE_PROMPT_CHARS) {
      problems.push({
        path: at,
        message: `asks ${casePrompt(c).length} characters (its prompt with its variables filled in, then its input); at most ${CASE_PROMPT_CHARS}`,
      });
    }
    if (c.criteria) checkCriteria(c.criteria, `${at}.criteria`, known, problems);
  });
  return problems;
}

/** The dataset as stored: every member present, the cases as sent. */
export function materialiseDataset(input: EvalDatasetCreate, id: string, updatedAt: string): EvalDataset {
  return {
    kind: 'service.eval-dataset/v1',
    id,
    slug: input.slug,
    version: 1,
    updated_at: updatedAt,
    name: input.name,
    description: input.description ?? null,
    cases: input.cases,
  };
}

/** Where a placeholder's name may go: letters, digits and `_`. */
const isNameChar = (ch: string): boolean => (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch === '_';

/**
 * The prompt with each `{{name}}` (spaces inside the braces allowed) replaced by the variable's
 * value; a placeholder without a value stays as written. Read in one pass, by hand (a tenant's text:
 * no regex), never re-reading what a value put in.
 */
export function fillVariables(prompt: string, variables: Readonly<Record<string, string>>): string {
  let out = '';
  let at = 0;
  for (;;) {
    const open = prompt.indexOf('{{', at);
    if (open < 0) return out + prompt.slice(at);
    const close = prompt.indexOf('}}', open + 2);
    if (close < 0) return out + prompt.slice(at);
    const name = prompt.slice(open + 2, close).trim();
    const known = name.length > 0 && [...name].every(isNameChar) && Object.hasOwn(variables, name);
    out += prompt.slice(at, open) + (known ? variables[name] : prompt.slice(open, close + 2));
    at = close + 2;
  }
}

/** What a case asks the agent: its prompt with its variables filled in, then its input as JSON. */
export function casePrompt(c: EvalCase): string {
  const prompt = c.prompt === undefined ? null : fillVariables(c.prompt, c.variables ?? {});
  if (c.input === undefined) return prompt ?? '';
  const input = `Input:\n${JSON.stringify(c.input)}`;
  return prompt === null ? input : `${prompt}\n\n${input}`;
}
