// Short sentences that tell a caller what a write changed compared with the stored version.
import type { Agent, Workflow } from './types';

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function describeMembers<T extends object>(before: T, after: T, skip: ReadonlySet<string>): string[] {
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
