// Runs queued runs in this process with bounded concurrency. A worker claims a queued run,
// executes it, records the end, and claims the next; a run that throws is recorded as failed and
// the worker goes on. A run accepted by this process is handed to the workers in memory (its
// document already parsed), so claiming it is one conditional UPDATE; runs queued otherwise (before
// a restart, beyond the hand-off queue, or by another replica: the store says so) are claimed from
// the database, oldest first. The database's queue is the truth: a run is claimed by exactly one
// worker of any process, whatever was handed over where.
//
// A claim is a lease that this runner renews while the run executes. Runs no live worker holds
// (their lease passed: the process died; with SQLite, at start, any owner's) are finished as
// failed, with their unspent credits returned — at start and by the queue poll, so a replica's runs
// are ended by another within a lease and a poll of its death. A run is never executed twice: one
// that another process took over is stopped here (its renewal fails, and its writes are refused).
// At shutdown, runs still executing after the grace period are handed back the same way at once.
//
// A run asked to stop (a cancel: in memory when it executes here, or seen in its row at its next
// progress save when the cancel reached another process) stops before its next step and ends
// cancelled. An agent run whose tool calls the approval policy held is parked in its row and its
// worker goes on to other runs; deciding the calls queues it again, and a worker resumes it from
// its stored state. Parked runs past their approval time are failed by the queue poll.
import crypto from 'node:crypto';
import os from 'node:os';
import type { Logger } from '../log';
import { withoutNul } from '../domain/json-limits';
import type { Agent, Workflow } from '../domain/types';
import { APPROVAL_EXPIRED, type Lease, type RunEventInput, type RunKind, type RunRow, type Store } from '../store/port';
import { runAgent, type AgentOutcome, type AgentRunState } from './agent-loop';
import type { ModelRegistry } from './models';
import { renderBudget, type RunLimits } from './limits';
import type { HttpToolOptions, ToolContext } from './tools/types';
import { runWorkflow, type StepOutcome } from './workflow-executor';

/** How often a running run's progress is saved for its pollers, at most. */
export const PROGRESS_INTERVAL_MS = 100;

/** Runs handed over in memory and not yet claimed, at most; beyond, the database's queue holds them. */
export const HAND_OFF_LIMIT = 1024;

/** How often idle workers look at the database's queue anyway (runs left waiting by a workspace's cap, or queued by another process). */
export const QUEUE_POLL_MS = 1000;

/** The error of a run whose worker stopped (its process died, or lost its lease) before it ended. */
export const INTERRUPTED = 'interrupted: the service stopped while this run was running; start a new test run';
/** The error of a run still executing when its process shut down after the grace period. */
export const SHUT_DOWN = 'interrupted: the service shut down before this run finished; start a new test run';

/** How long a claim lasts unless renewed, by default; it is renewed every third of it. */
export const DEFAULT_LEASE_MS = 30_000;

export interface RunnerOptions {
  store: Store;
  models: ModelRegistry;
  http: HttpToolOptions;
  /** What one run may render, hold, return and wait for. */
  limits: RunLimits;
  workers: number;
  /** Runs of one workspace executing at once, at most (the rest wait in the queue): one workspace cannot take every worker. */
  perWorkspace?: number;
  logger: Logger;
  /** Runs handed over in memory and not yet claimed, at most (default HAND_OFF_LIMIT). */
  handOffLimit?: number;
  /** How long a parked run waits for its held calls to be decided (default 24 hours). */
  approvalTimeoutMs?: number;
  /** How long a claim on a run lasts unless renewed (default DEFAULT_LEASE_MS). */
  leaseMs?: number;
}

export const DEFAULT_APPROVAL_TIMEOUT_MS = 24 * 3600_000;

/** A queued run as a worker executes it: handed over by its acceptance, or read from its row. */
export interface QueuedRun {
  id: string;
  kind: RunKind;
  workspaceId: string;
  /** The agent or workflow that runs. Shared with the store's row cache: never mutated. */
  snapshot: unknown;
  /** A workflow run's agents (by slug) as stored when it was accepted; absent for runs without agent steps. */
  stepAgents?: Record<string, Agent>;
  request: unknown;
  state: unknown;
  creditsReserved: number;
  creditsSpent: number;
}

/** A stored JSON text, or undefined when it does not parse (a damaged row: executing it fails the run). */
function parsedOrUndefined(text: string | null): unknown {
  try {
    return JSON.parse(text as string) as unknown;
  } catch {
    return undefined;
  }
}

const fromRow = (row: RunRow): QueuedRun => ({
  id: row.id,
  kind: row.kind,
  workspaceId: row.workspace_id,
  snapshot: parsedOrUndefined(row.snapshot),
  ...(row.step_agents !== null && { stepAgents: parsedOrUndefined(row.step_agents) as Record<string, Agent> | undefined }),
  request: parsedOrUndefined(row.request),
  state: JSON.parse(row.state) as unknown,
  creditsReserved: row.credits_reserved,
  creditsSpent: row.credits_spent,
});

export interface Runner {
  start(): Promise<void>;
  /**
   * A run was queued: wake a worker. With the run (as its acceptance knows it), a worker takes it
   * from memory; without, the workers look in the database's queue.
   */
  notify(run?: QueuedRun): void;
  /** Stops claiming runs and waits (at most `graceMs`) for the ones executing. */
  stop(graceMs: number): Promise<void>;
  /** Resolves when no run is queued or executing (tests). */
  idle(): Promise<void>;
  /**
   * Asks run `id` to stop before its next step, when it executes in this process: resolves once
   * its end is recorded. Null when it does not execute here.
   */
  requestStop(id: string): Promise<void> | null;
}

export function createRunner(opts: RunnerOptions): Runner {
  const { store, logger } = opts;
  const handOffLimit = opts.handOffLimit ?? HAND_OFF_LIMIT;
  const cap = opts.perWorkspace ?? Math.max(1, opts.workers - 1);
  // A run left queued because its workspace was at its cap: when any run ends, the workers look again.
  let deferred = false;
  let executing = 0;
  let poller: NodeJS.Timeout | null = null;
  let active = 0;
  let stopping = false;
  /** Runs handed over in memory, oldest first. */
  const handed: QueuedRun[] = [];
  // Whether the database may hold queued runs that were not handed over (true at start). Counted,
  // so a worker that found that queue empty can tell whether a run was queued while it looked.
  let backlog = 0;
  const workers = new Set<Promise<void>>();
  let idleWaiters: (() => void)[] = [];
  /** The runs executing here: how to ask each to stop, and its end. */
  const executingRuns = new Map<string, { stop: () => void; ended: Promise<void> }>();
  const approvalTimeoutMs = opts.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
  // This runner's name on the runs it holds: unique per process start.
  const lease: Lease = { owner: `${os.hostname()}/${process.pid}/${crypto.randomUUID().slice(0, 8)}`, ms: opts.leaseMs ?? DEFAULT_LEASE_MS };
  let renewer: NodeJS.Timeout | null = null;

  /** What a run's tool calls get: one rendering budget for the whole run (its agent steps included). */
  const toolContext = (workspaceId: string): ToolContext => ({ workspaceId, kv: store.kv, http: opts.http, limits: opts.limits, budget: renderBudget(opts.limits) });
  const now = () => new Date().toISOString();

  /**
   * What a run spends and how far it got, kept here and saved without holding the run up. Steps
   * are charged against the run's reservation in memory; beyond it, each is reserved from the
   * workspace's balance at once (a conditional debit: never below zero). The count is saved with
   * the run's progress and its end; a run that a stop interrupts is refunded what it reserved
   * beyond what was saved. Progress is saved at most every PROGRESS_INTERVAL_MS (a run that ends
   * sooner writes only its end), and at most one progress write is queued at a time: it writes the
   * latest state when its group commits, and the group commit keeps order, so the end always
   * lands after it.
   */
  function ledger(run: QueuedRun) {
    let reserved = run.creditsReserved;
    let spent = run.creditsSpent;
    let latest: unknown = run.state;
    let queued = false;
    let lastSavedAt = performance.now(); // the claim saved the run's initial state
    let timer: NodeJS.Timeout | null = null;
    let stopRequested = false;
    /** Events not saved yet: they go with the next progress save, or with the end. */
    let events: RunEventInput[] = [];
    const takeEvents = () => {
      const taken = events;
      events = [];
      return taken;
    };
    const current = () => {
      queued = false;
      return { state: latest, spent, events: takeEvents() };
    };
    const save = () => {
      timer = null;
      queued = true;
      lastSavedAt = performance.now();
      store.runs
        .saveState(run.id, current)
        .then((saved) => {
          if (saved !== 'saved') stopRequested = true; // a cancel seen in the row, or ended by another path
        })
        .catch((err: unknown) => logger.error({ err, runId: run.id }, 'could not save the progress of a run'));
    };
    /** Saves soon: now, or PROGRESS_INTERVAL_MS after the last save; one save queued at a time. */
    const scheduleSave = () => {
      if (queued || timer) return;
      const wait = lastSavedAt + PROGRESS_INTERVAL_MS - performance.now();
      if (wait > 0) timer = setTimeout(save, wait).unref();
      else save();
    };
    const stopTimer = () => {
      if (timer) clearTimeout(timer);
      timer = null;
    };
    return {
      stop: () => void (stopRequested = true),
      shouldStop: () => stopRequested,
      emit: (type: string, data: Record<string, unknown>) => {
        events.push({ type, data, at: now() });
        scheduleSave();
      },
      async charge(): Promise<boolean> {
        if (spent >= reserved) {
          if (!(await store.runs.reserveMore(run.id, 1))) return false;
          reserved++;
        }
        spent++;
        return true;
      },
      async progress(state: unknown): Promise<void> {
        latest = state;
        scheduleSave();
      },
      finish: (outcome: { status: 'succeeded' | 'failed' | 'cancelled'; error: string | null; state: unknown }) => {
        stopTimer();
        return store.runs.finish(run.id, outcome.status, withoutNul(outcome.error), outcome.state, spent, now(), takeEvents());
      },
      /** Parks the run for approval; a cancel that came first ends it cancelled instead. */
      async park(outcome: Extract<AgentOutcome, { status: 'awaiting_approval' }>): Promise<void> {
        stopTimer();
        const expiresAt = new Date(Date.now() + approvalTimeoutMs).toISOString();
        const parked = await store.runs.park(run.id, { state: outcome.state, spent, calls: outcome.held, expiresAt, events: takeEvents() }, now());
        if (parked === 'cancel_requested') await store.runs.finish(run.id, 'cancelled', null, outcome.state, spent, now());
      },
    };
  }

  type Ledger = ReturnType<typeof ledger>;

  async function executeAgentRun(run: QueuedRun, account: Ledger): Promise<void> {
    const agent = run.snapshot as Agent;
    const { prompt } = run.request as { prompt: string };
    const outcome = await runAgent(
      agent,
      prompt,
      {
        models: opts.models,
        tools: toolContext(run.workspaceId),
        // The first step was reserved when the run was accepted; later ones are paid as they come.
        chargeStep: account.charge,
        onProgress: account.progress as (state: AgentRunState) => Promise<void>,
        shouldStop: account.shouldStop,
        emit: account.emit,
      },
      run.state as AgentRunState, // a parked run's state resumes where it stopped; a new run's is empty
    );
    if (outcome.status === 'awaiting_approval') await account.park(outcome);
    else await account.finish(outcome);
  }

  async function executeWorkflowRun(run: QueuedRun, account: Ledger): Promise<void> {
    const workflow = run.snapshot as Workflow;
    const { input } = run.request as { input: Record<string, unknown> };
    const tools = toolContext(run.workspaceId);
    const runAgentStep = async (slug: string, prompt: string): Promise<StepOutcome> => {
      // The agent as it was stored when the run was accepted (checked then: it exists and is not archived).
      const agent = run.stepAgents && Object.hasOwn(run.stepAgents, slug) ? run.stepAgents[slug] : undefined;
      if (!agent) return { ok: false, error: `agent '${slug}' was not recorded when the run was accepted` };
      // The workflow step is the unit of cost: the agent's own model steps are not charged again.
      const outcome = await runAgent(agent, prompt, {
        models: opts.models,
        tools,
        chargeStep: async () => true,
        onProgress: async () => undefined,
        shouldStop: account.shouldStop,
        canWaitForApproval: false,
      });
      if (outcome.status === 'succeeded') return { ok: true, output: outcome.state.final_text };
      return { ok: false, error: outcome.status === 'cancelled' ? 'cancelled' : (outcome.error as string) };
    };
    const outcome = await runWorkflow(workflow, input, {
      tools,
      runAgentStep,
      chargeStep: account.charge,
      onProgress: account.progress,
      shouldStop: account.shouldStop,
      emit: account.emit,
    });
    await account.finish(outcome);
  }

  async function execute(run: QueuedRun): Promise<void> {
    const account = ledger(run);
    let ended = () => {};
    executingRuns.set(run.id, { stop: account.stop, ended: new Promise<void>((resolve) => (ended = resolve)) });
    try {
      if (run.kind === 'agent') await executeAgentRun(run, account);
      else await executeWorkflowRun(run, account);
    } catch (err) {
      logger.error({ err, runId: run.id }, 'run failed unexpectedly');
      await account.finish({ status: 'failed', error: 'internal error while executing the run', state: run.state }).catch((e: unknown) => {
        logger.error({ err: e, runId: run.id }, 'could not record the failure of a run');
      });
    } finally {
      executingRuns.delete(run.id);
      ended();
    }
  }

  /** Executes a claimed run; when it ends, runs left waiting by a workspace's cap may go, so the workers look in the table. */
  async function ranOne(run: QueuedRun): Promise<void> {
    executing++;
    try {
      await execute(run);
    } finally {
      executing--;
    }
    if (deferred) backlog++;
  }

  async function work(): Promise<void> {
    active++;
    try {
      while (!stopping) {
        const next = handed.shift();
        if (next) {
          // False when the database's queue gave it to another worker first, or its workspace is at
          // its cap: then it waits in the table, which the workers read again when a run ends.
          if (await store.runs.claim(next.id, lease, cap)) await ranOne(next);
          else deferred = true;
          continue;
        }
        if (!backlog) break;
        const seen = backlog;
        const row = await store.runs.claimNext(lease, cap);
        if (row) await ranOne(fromRow(row));
        else if (seen === backlog) {
          backlog = 0;
          // Nothing claimable and nothing executing here: no run of ours will free a cap (runs another
          // process executes are the queue poll's to notice).
          if (executing === 0) deferred = false;
        }
      }
    } catch (err) {
      // Whatever stopped this worker (a claim whose group did not commit, say) may have left a run
      // queued in the table and no longer in memory: the next worker looks there.
      backlog++;
      logger.error({ err }, 'run worker stopped unexpectedly');
    } finally {
      active--;
      if (active === 0) {
        const waiters = idleWaiters;
        idleWaiters = [];
        for (const resolve of waiters) resolve();
      }
    }
  }

  /** Adds a worker unless all are busy; each queued run notifies once, so busy periods fill up to `workers`. */
  function notify(run?: QueuedRun): void {
    // A run beyond the limit stays in the database's queue, which the workers then read (oldest
    // first, so a backlog is not starved by newer runs handed over).
    if (run && handed.length < handOffLimit && !backlog) handed.push(run);
    else backlog++;
    if (stopping || active >= opts.workers) return;
    const worker = work(); // counts itself active before its first await
    workers.add(worker);
    void worker.finally(() => workers.delete(worker));
  }

  /** Fails the runs no live worker holds (see recoverAbandoned; `starting`: this runner's first look). */
  async function recover(starting = false): Promise<void> {
    const ended = await store.runs.recoverAbandoned(INTERRUPTED, starting ? lease.owner : undefined);
    if (ended) logger.warn({ runs: ended }, 'finished runs whose worker stopped as failed');
  }

  /** Renews the leases of the runs executing here; one that another process took over is stopped. */
  async function renew(): Promise<void> {
    const ids = [...executingRuns.keys()];
    if (!ids.length) return;
    const held = new Set(await store.runs.renewLeases(lease, ids));
    for (const id of ids) {
      if (held.has(id)) continue;
      logger.warn({ runId: id }, 'lost the lease of a run: it is no longer executed here');
      executingRuns.get(id)?.stop();
    }
  }

  return {
    async start() {
      await recover(true);
      renewer = setInterval(() => renew().catch((err: unknown) => logger.error({ err }, 'could not renew run leases')), Math.max(100, Math.floor(lease.ms / 3)));
      renewer.unref();
      store.runs.onQueued(() => notify()); // another replica queued a run
      for (let i = 0; i < opts.workers; i++) notify(); // runs queued before this start
      // The safety net: a run no notification announced (left by a workspace's cap, or written by
      // another process) is picked up within a poll interval.
      poller = setInterval(() => {
        if (active < opts.workers && !handed.length) notify();
        store.runs.expireApprovals(APPROVAL_EXPIRED, now()).catch((err: unknown) => logger.error({ err }, 'could not expire runs waiting for approval'));
        recover().catch((err: unknown) => logger.error({ err }, 'could not recover abandoned runs'));
      }, QUEUE_POLL_MS);
      poller.unref();
    },
    notify,
    async stop(graceMs) {
      stopping = true;
      if (poller) clearInterval(poller);
      await Promise.race([Promise.all([...workers]), new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
      if (renewer) clearInterval(renewer);
      // Runs still executing are handed back now rather than left for their leases to pass: ended as
      // failed with their credits returned — first, so that a worker stopping one cannot record it
      // as cancelled — and then their workers stop at their next step (their writes refused).
      if (executingRuns.size) {
        const released = await store.runs.releaseAll(lease.owner, SHUT_DOWN);
        if (released) logger.warn({ runs: released }, 'finished runs still executing at shutdown as failed');
        for (const run of executingRuns.values()) run.stop();
      }
    },
    idle() {
      return active === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve));
    },
    requestStop(id) {
      const executing = executingRuns.get(id);
      if (!executing) return null;
      executing.stop();
      return executing.ended;
    },
  };
}
