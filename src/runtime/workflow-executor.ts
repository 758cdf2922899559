// The workflow executor: steps run as soon as every step in their `after` has succeeded, so
// independent steps run concurrently; a failed step fails the run and every step that waits for it
// (directly or transitively) is recorded as skipped. Arguments and prompts are rendered from the
// run's input and the outputs of the steps they wait for; the output template is rendered last.
// A stop asked for (a cancel) starts no further step: steps in flight finish and are recorded, the
// ones not started are skipped, and the run ends cancelled.
// What a run may render, hold and return is bounded (runtime/limits.ts): a step past a limit fails,
// and the run with it.
import { jsonBytesWithin } from '../domain/json-limits';
import { RenderLimitError, renderText, renderValue, type TemplateScope } from '../domain/templates';
import type { Workflow, WorkflowStep } from '../domain/types';
import type { components } from '../../generated/api';
import { limitErrors, StateMeter, type RunLimits } from './limits';
import type { WorkspaceApps } from '../apps/registry';
import type { ToolContext } from '../apps/types';
import { inOutcomeSpan } from '../tracing';

type StepResult = components['schemas']['StepResult'];

export interface WorkflowRunState {
  current_step: string | null;
  step_results: Record<string, StepResult>;
  output: string | null;
}

export type StepOutcome = { ok: true; output: unknown } | { ok: false; error: string };

export interface WorkflowExecutorDeps {
  /** The apps of the run's workspace: a tool step calls one of their tools. */
  apps: WorkspaceApps;
  tools: ToolContext;
  /** Runs the workspace's agent `slug` with a prompt; its final text is the step's output. */
  runAgentStep: (slug: string, prompt: string) => Promise<StepOutcome>;
  /** Pays for one executed step; false when the workspace cannot. */
  chargeStep: () => Promise<boolean>;
  onProgress: (state: WorkflowRunState) => Promise<void>;
  /** Whether the run was asked to stop (checked before each step starts). */
  shouldStop?: () => boolean;
  /** Reports a step that started or finished to the run's event stream. */
  emit?: (type: string, data: Record<string, unknown>) => void;
  now?: () => string;
}

export interface WorkflowOutcome {
  status: 'succeeded' | 'failed' | 'cancelled';
  error: string | null;
  state: WorkflowRunState;
}

export function initialWorkflowState(doc: Workflow): WorkflowRunState {
  const step_results: Record<string, StepResult> = {};
  for (const step of doc.steps) step_results[step.id] = { status: 'pending', output: null, error: null, started_at: null, finished_at: null };
  return { current_step: null, step_results, output: null };
}

/** Why rendering `what` failed, naming the limit it would have passed (any other error is thrown on). */
function renderError(err: unknown, what: string, limits: RunLimits): string {
  if (!(err instanceof RenderLimitError)) throw err;
  return err.limit === 'run' ? limitErrors.render(limits) : limitErrors.template(what, limits);
}

/** Pays for a step and executes it, in a span of its own. */
const executeStep = (step: WorkflowStep, scope: TemplateScope, deps: WorkflowExecutorDeps): Promise<StepOutcome> =>
  inOutcomeSpan('workflow step', { 'build.step.id': step.id, 'build.step.kind': step.kind }, () => payAndExecute(step, scope, deps));

/** Pays for a step and executes it: a tool with its rendered arguments, or an agent with its rendered prompt. */
async function payAndExecute(step: WorkflowStep, scope: TemplateScope, deps: WorkflowExecutorDeps): Promise<StepOutcome> {
  const { limits, budget } = deps.tools;
  if (!(await deps.chargeStep())) return { ok: false, error: 'credits exhausted: the workspace cannot pay for this step' };
  if (step.kind === 'tool') {
    let args: unknown;
    try {
      args = renderValue(step.args, scope, budget);
    } catch (err) {
      return { ok: false, error: renderError(err, 'its arguments', limits) };
    }
    // A step may name the connection its call goes through; without, the app's only usable one.
    return deps.apps.invoke(step.tool, args, step.connection ? { ...deps.tools, connections: { allowed: 'all', named: step.connection } } : deps.tools);
  }
  let prompt: string;
  try {
    prompt = renderText(step.prompt, scope, budget);
  } catch (err) {
    return { ok: false, error: renderError(err, 'its prompt', limits) };
  }
  const outcome = await deps.runAgentStep(step.agent, prompt);
  if (outcome.ok && jsonBytesWithin(outcome.output, limits.stepOutputBytes) === null)
    return { ok: false, error: limitErrors.stepOutput(`agent '${step.agent}'`, limits) };
  return outcome;
}

const CANCELLED_SKIP = 'skipped: the run was cancelled';

/** Skips every step not started (the run was asked to stop); whether there was one. */
function skipPending(doc: Workflow, result: (id: string) => StepResult): boolean {
  let skipped = false;
  for (const step of doc.steps) {
    if (result(step.id).status !== 'pending') continue;
    Object.assign(result(step.id), { status: 'skipped', error: CANCELLED_SKIP });
    skipped = true;
  }
  return skipped;
}

/** Starts every step whose dependencies succeeded and skips every step behind a failure; repeats until nothing changes. */
function advanceSteps(doc: Workflow, result: (id: string) => StepResult, start: (step: WorkflowStep) => void): boolean {
  let changedAny = false;
  for (let changed = true; changed; ) {
    changed = false;
    for (const step of doc.steps) {
      if (result(step.id).status !== 'pending') continue;
      const blocker = step.after.find((dep) => ['failed', 'skipped'].includes(result(dep).status));
      if (blocker) {
        Object.assign(result(step.id), { status: 'skipped', error: `skipped: step '${blocker}' did not succeed` });
        changed = true;
      } else if (step.after.every((dep) => result(dep).status === 'succeeded')) {
        start(step);
        changed = true;
      }
    }
    changedAny ||= changed;
  }
  return changedAny;
}

/** How the run ends once no step runs: cancelled, failed at its first failed step, or succeeded with its rendered output. */
function ending(doc: Workflow, state: WorkflowRunState, scope: TemplateScope, deps: WorkflowExecutorDeps): WorkflowOutcome {
  const { limits, budget } = deps.tools;
  const result = (id: string) => state.step_results[id] as StepResult;
  state.current_step = null;
  if (deps.shouldStop?.() && doc.steps.some((s) => result(s.id).error === CANCELLED_SKIP)) {
    return { status: 'cancelled', error: null, state };
  }
  const failed = doc.steps.find((s) => result(s.id).status === 'failed');
  if (failed) return { status: 'failed', error: `step '${failed.id}' failed: ${result(failed.id).error}`, state };
  if (doc.output !== null) {
    try {
      state.output = renderText(doc.output, scope, budget);
    } catch (err) {
      return { status: 'failed', error: renderError(err, 'the output', limits), state };
    }
    if (Buffer.byteLength(state.output) > limits.outputBytes) {
      state.output = null;
      return { status: 'failed', error: limitErrors.output(limits), state };
    }
  }
  return { status: 'succeeded', error: null, state };
}

export async function runWorkflow(doc: Workflow, input: Record<string, unknown>, deps: WorkflowExecutorDeps): Promise<WorkflowOutcome> {
  const now = deps.now ?? (() => new Date().toISOString());
  const state = initialWorkflowState(doc);
  const scope: TemplateScope = { inputs: input, steps: {} };
  const running = new Map<string, Promise<void>>();
  const result = (id: string) => state.step_results[id] as StepResult;
  const stateSize = new StateMeter(deps.tools.limits.stateBytes, state);

  /** A step's output is kept only while the run's state stays within its limit. */
  const kept = (outcome: StepOutcome): StepOutcome =>
    !outcome.ok || stateSize.add(outcome.output) ? outcome : { ok: false, error: limitErrors.state(deps.tools.limits) };

  function start(step: WorkflowStep): void {
    Object.assign(result(step.id), { status: 'running', started_at: now() });
    state.current_step = step.id;
    deps.emit?.('step.started', { step: step.id });
    const task = executeStep(step, scope, deps)
      .then(kept)
      .catch((err: unknown): StepOutcome => ({ ok: false, error: `step failed unexpectedly: ${(err as Error).message}` }))
      .then(async (outcome) => {
        const r = result(step.id);
        Object.assign(r, outcome.ok ? { status: 'succeeded', output: outcome.output } : { status: 'failed', error: outcome.error }, { finished_at: now() });
        if (outcome.ok) scope.steps[step.id] = outcome.output;
        deps.emit?.('step.finished', { step: step.id, status: r.status, error: r.error });
        running.delete(step.id);
        if (state.current_step === step.id) state.current_step = [...running.keys()].pop() ?? null;
        await deps.onProgress(state);
      });
    running.set(step.id, task);
  }

  for (;;) {
    // A stop asked for starts no further step: the ones not started are skipped.
    const changed = deps.shouldStop?.() ? skipPending(doc, result) : advanceSteps(doc, result, start);
    if (changed) await deps.onProgress(state);
    if (!running.size) break;
    await Promise.race(running.values());
  }
  return ending(doc, state, scope, deps);
}
