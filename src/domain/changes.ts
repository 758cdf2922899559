// Short sentences that tell a caller what a write changed compared with the stored version.
import type { Agent, EvalDataset, Workflow } from './types';

/**
 * Whether two parsed JSON values are equal (objects compared by their members, in any order).
 * Walks them instead of serialising both: a walk allocates nothing and stops at the first
 * difference, where JSON.stringify would build two strings of every member of every replace.
 */
export function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!same(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(b, key) || !same((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false;
  }
  return true;
}

export function describeMembers<T extends object>(before: T, after: T, skip: ReadonlySet<string>): string[] {
  const changes: string[] = [];
  for (const key of Object.keys(after) as (keyof T & string)[]) {
    if (skip.has(key)) continue;
    if (!same(before[key], after[key])) changes.push(`${key} changed`);
  }
  return changes;
}

/** Added, removed and changed items of two lists whose items carry an `id`. */
function describeList<T extends { id: string }>(noun: string, label: (item: T) => string, before: T[], after: T[]): string[] {
  const old = new Map(before.map((item) => [item.id, item]));
  const now = new Set(after.map((item) => item.id));
  const changes: string[] = [];
  for (const item of after) {
    const previous = old.get(item.id);
    if (!previous) changes.push(`${noun} '${label(item)}' added`);
    else if (!same(previous, item)) changes.push(`${noun} '${label(item)}' changed`);
  }
  for (const item of before) if (!now.has(item.id)) changes.push(`${noun} '${label(item)}' removed`);
  const order = (list: T[]) => list.filter((item) => old.has(item.id) && now.has(item.id)).map((item) => item.id);
  if (!same(order(before), order(after))) changes.push(`${noun}s reordered`);
  return changes;
}

const AGENT_SKIP = new Set(['updated_at', 'triggers', 'status']);
const DATASET_SKIP = new Set(['updated_at', 'version', 'id', 'cases']);
const WORKFLOW_SKIP = new Set(['updated_at', 'steps']);

export function describeAgentChanges(before: Agent | null, after: Agent): string[] {
  if (!before) {
    return [`agent '${after.slug}' created`, ...after.triggers.map((t) => `trigger '${t.name}' added`)];
  }
  const changes = describeMembers(before, after, AGENT_SKIP);
  if (before.status !== after.status) changes.push(`status changed from ${before.status} to ${after.status}`);
  changes.push(...describeList('trigger', (t) => t.name, before.triggers, after.triggers));
  return changes.length ? changes : ['no changes'];
}

export function describeWorkflowChanges(before: Workflow | null, after: Workflow): string[] {
  if (!before) return [`workflow '${after.slug}' created`];
  const changes = describeMembers(before, after, WORKFLOW_SKIP);
  changes.push(...describeList('step', (s) => s.id, before.steps, after.steps));
  return changes.length ? changes : ['no changes'];
}

export function describeEvalDatasetChanges(before: EvalDataset | null, after: EvalDataset): string[] {
  const count = `${after.cases.length} case${after.cases.length === 1 ? '' : 's'}`;
  if (!before) return [`eval dataset '${after.slug}' created with ${count}`];
  const changes = [...describeMembers(before, after, DATASET_SKIP), ...describeList('case', (c) => c.id, before.cases, after.cases)];
  return changes.length ? changes : ['no changes'];
}
