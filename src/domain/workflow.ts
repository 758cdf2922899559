// Workflow documents: defaults (always present on read), the input-name rule the schema language
// of OpenAPI 3.0 cannot state, and the stored shape. Pure.
import type { Normalised } from './agent';
import type { Problem, Workflow, WorkflowDraft, WorkflowStep, WorkflowStepInput } from './types';

const INPUT_NAME = /^[a-z0-9_]{1,40}$/;
/** Names that mean something to every JavaScript object: as input names they would reach its prototype. */
const RESERVED_INPUT_NAMES = new Set(['__proto__', 'constructor', 'prototype']);

/** Rules on a workflow that the JSON schema cannot express; each problem names its path. */
export function checkWorkflowShape(doc: WorkflowDraft): Problem[] {
  const problems: Problem[] = [];
  for (const name of Object.keys(doc.inputs ?? {})) {
    if (!INPUT_NAME.test(name)) {
      problems.push({
        path: `body.inputs.${name}`,
        message: 'input names are 1..40 characters of lowercase letters, digits and underscores',
      });
    } else if (RESERVED_INPUT_NAMES.has(name)) {
      problems.push({ path: `body.inputs.${name}`, message: `'${name}' is a reserved name; input names cannot be __proto__, constructor or prototype` });
    }
  }
  return problems;
}

/** Fills every default (docs/documents.md: normalisation) in schema order and says which ones it filled. */
export function normaliseWorkflow(input: WorkflowDraft): Normalised<WorkflowDraft> {
  const changes: string[] = [];
  function fill<T>(path: string, value: T | undefined, fallback: T, shown: string): T {
    if (value !== undefined) return value;
    changes.push(`${path} defaulted to ${shown}`);
    return fallback;
  }
  const document: WorkflowDraft = {
    kind: input.kind,
    slug: input.slug,
    name: input.name,
    description: fill('description', input.description, null, 'null'),
    enabled: fill('enabled', input.enabled, true, 'true'),
    ...(input.updated_at !== undefined && { updated_at: input.updated_at }),
    space: fill('space', input.space, { team: null }, '{ team: null }'),
    send_as: fill('send_as', input.send_as, null, 'null'),
    inputs: fill('inputs', input.inputs, {}, '{}'),
    schedule: fill('schedule', input.schedule, null, 'null'),
    steps: input.steps.map((step, i) => normaliseStep(step, `steps[${i}]`, fill)),
    output: fill('output', input.output, null, 'null'),
  };
  return { document, changes };
}

type Fill = <T>(path: string, value: T | undefined, fallback: T, shown: string) => T;

function normaliseStep(step: WorkflowStepInput, path: string, fill: Fill): WorkflowStep {
  const note = step.note !== undefined ? { note: step.note } : {};
  if (step.kind === 'tool') {
    return {
      id: step.id,
      kind: 'tool',
      tool: step.tool,
      args: fill(`${path}.args`, step.args, {}, '{}'),
      after: fill(`${path}.after`, step.after, [], '[]'),
      ...note,
      ...(step.connection !== undefined && { connection: step.connection }),
    };
  }
  return {
    id: step.id,
    kind: 'agent',
    agent: step.agent,
    prompt: step.prompt,
    after: fill(`${path}.after`, step.after, [], '[]'),
    ...note,
  };
}

/** The stored document: a normalised draft with the stamp of this write. */
export function materialiseWorkflow(draft: WorkflowDraft, updatedAt: string): Workflow {
  return {
    kind: 'service.workflow/v1',
    slug: draft.slug,
    name: draft.name,
    description: draft.description ?? null,
    enabled: draft.enabled ?? true,
    updated_at: updatedAt,
    space: draft.space ?? { team: null },
    send_as: draft.send_as ?? null,
    inputs: draft.inputs ?? {},
    schedule: draft.schedule ?? null,
    steps: draft.steps as WorkflowStep[],
    output: draft.output ?? null,
  };
}

/**
 * A test run's input against the workflow's declared inputs: unknown names are problems, missing
 * ones take their default, and a missing input without a default is a problem too.
 */
export function resolveInput(doc: Workflow, input: Record<string, unknown>): { input: Record<string, unknown>; problems: Problem[] } {
  const declared = doc.inputs;
  const names = Object.keys(declared);
  const problems: Problem[] = [];
  for (const name of Object.keys(input)) {
    if (!Object.hasOwn(declared, name)) {
      problems.push({ path: `body.input.${name}`, message: `not an input of workflow '${doc.slug}' (declared: ${names.join(', ') || 'none'})` });
    }
  }
  const resolved: Record<string, unknown> = {};
  for (const name of names) {
    const declaration = declared[name] ?? {};
    if (Object.hasOwn(input, name)) resolved[name] = input[name];
    else if (Object.hasOwn(declaration, 'default')) resolved[name] = declaration.default;
    else problems.push({ path: `body.input.${name}`, message: 'required: the input has no default' });
  }
  return { input: resolved, problems };
}
