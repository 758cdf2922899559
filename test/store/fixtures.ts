// What the store contract suite's cases build their writes from: documents, runs, leases, and ids
// of their own (every case uses workspaces, documents, triggers and runs no other case names, so
// the cases of a file can share one store).
import { randomUUID } from 'node:crypto';
import { minimalAgent } from '../helpers/fixtures';
import type { Agent, CreateOutcome, Lease, NewRun, ReplaceOutcome, SecretRow, Store, Workflow } from './adapters';

/** A name no other case uses: `<prefix>-<random>`. */
export const unique = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

/** A workspace of the case's own. */
export const workspace = (): string => unique('ws');

export const agent = (slug: string, more: Partial<Agent> = {}): Agent =>
  ({ ...minimalAgent(slug), id: randomUUID(), slug, status: 'draft', updated_at: '', reasoning_effort: null, ...more }) as Agent;

export const workflow = (slug: string, more: Partial<Workflow> = {}): Workflow =>
  ({
    kind: 'service.workflow/v1',
    slug,
    name: slug,
    description: null,
    enabled: true,
    updated_at: '',
    space: { team: null },
    send_as: null,
    inputs: {},
    schedule: null,
    steps: [],
    output: null,
    ...more,
  }) as unknown as Workflow;

export type TriggerDoc = Agent['triggers'][number];

export const hook = (id: string, signing: 'none' | 'standard-webhooks' = 'none'): TriggerDoc =>
  ({ kind: 'webhook', id, name: id, prompt: null, enabled: true, secret_prefix: null, signing }) as TriggerDoc;

export const poll = (id: string, args: Record<string, unknown> = { key: 'x' }, cron = '*/5 * * * *'): TriggerDoc =>
  ({ kind: 'poll', id, name: id, prompt: null, enabled: true, tool: 'kv.get', args, cron, timezone: 'UTC' }) as TriggerDoc;

export const secret = (triggerId: string, hash: string, signingSecret: string | null = null): SecretRow => ({
  triggerId,
  hash,
  prefix: `whk_${hash.slice(0, 4)}`,
  signingSecret,
});

export const opts = (limit = 100, deriveSlug = false) => ({ deriveSlug, limit });

/** The record of a create or replace that must succeed. */
export async function ok<T>(outcome: Promise<CreateOutcome<T> | ReplaceOutcome<T>>) {
  const result = await outcome;
  if (!result.ok) throw new Error(`write failed: ${JSON.stringify(result)}`);
  return result.record;
}

/** Creates an agent (must succeed) and returns its record. */
export const createAgent = (store: Store, ws: string, doc: Agent, secrets: SecretRow[] = []) =>
  ok(store.agents.create(ws, doc.id, doc, opts(), secrets, CREATOR));

export const newRun = (id: string, o: Partial<NewRun> = {}): NewRun => ({
  id,
  kind: 'workflow',
  workspaceId: 'ws',
  startedBy: 'user-1',
  targetId: 'wf-1',
  targetVersion: 1,
  source: 'test',
  request: { input: {} },
  snapshotJson: '{"kind":"service.workflow/v1","slug":"wf","steps":[]}',
  state: { step: 0 },
  minimumCost: 1,
  initialCredits: 1000,
  ...o,
});

/** Accepts a run that must be queued. */
export async function queue(store: Store, run: NewRun): Promise<void> {
  const outcome = await store.runs.accept(run, (balance) => `only ${balance}`);
  if (outcome.status !== 'queued') throw new Error(`run ${run.id} not queued: ${JSON.stringify(outcome)}`);
}

/** Accepts and claims a run (under `owner`'s long lease); it must be running. */
export async function running(store: Store, run: NewRun, owner = unique('worker')): Promise<void> {
  await queue(store, run);
  if (!(await store.runs.claim(run.id, lease(owner), 1_000))) throw new Error(`run ${run.id} not claimed`);
}

export const lease = (owner: string, ms = 600_000): Lease => ({ owner, ms });
export const now = (): string => new Date().toISOString();
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

/** The types of a run's events, in order. */
export const eventTypes = async (store: Store, runId: string): Promise<string[]> => (await store.runs.events(runId, 0, 100_000)).map((e) => e.type);

/** The workspace's balance (created with `initial` if new). */
export const balance = (store: Store, ws: string, initial = 0): Promise<number> => store.workspaces.credits(ws, initial);

/**
 * Empties the queue the cases of a store share: every queued run is claimed and ended, so a case
 * that claims "the oldest queued run" gets one of its own.
 */
export async function emptyQueue(store: Store): Promise<void> {
  for (let row = await store.runs.claimNext(lease('queue-emptier'), 1_000_000); row; row = await store.runs.claimNext(lease('queue-emptier'), 1_000_000)) {
    await store.runs.finish(row.id, 'failed', 'cleared', {}, 0, now());
  }
}

export async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not true within ${timeoutMs} ms: ${condition.toString()}`);
    await sleep(10);
  }
}

/** The version a write keeps: who wrote it and what it changed. */
export const WRITER = { author: 'tester', changes: ['written by a test'] };
/** A create's version (of the document as stored). */
export const CREATOR = (): typeof WRITER => WRITER;
