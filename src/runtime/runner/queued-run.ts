// A queued run as a worker executes it: handed over by its acceptance (its documents already
// parsed), or read from its row when it is claimed from the database's queue.
import type { Agent } from '../../domain/types';
import type { RunKind, RunRow } from '../../store/port';

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
  /** Who started it (a user, or a trigger's or schedule's identity), and who alone may read it (a test's child runs), or null. */
  startedBy: string;
  visibleTo: string | null;
  creditsReserved: number;
  creditsSpent: number;
  /** What started it (`test`, `webhook`, `schedule`, `poll`) and when it was accepted: for the run metrics. */
  source: string;
  acceptedAt: string;
  /** The `traceparent` of the request or trigger that queued it: its span's parent. */
  traceParent: string | null;
}

/** A stored JSON text, or undefined when it does not parse (a damaged row: executing it fails the run). */
function parsedOrUndefined(text: string | null): unknown {
  try {
    return JSON.parse(text as string) as unknown;
  } catch {
    return undefined;
  }
}

/** The run a claimed row holds. */
export const fromRow = (row: RunRow): QueuedRun => ({
  id: row.id,
  kind: row.kind,
  workspaceId: row.workspace_id,
  snapshot: parsedOrUndefined(row.snapshot),
  ...(row.step_agents !== null && { stepAgents: parsedOrUndefined(row.step_agents) as Record<string, Agent> | undefined }),
  request: parsedOrUndefined(row.request),
  startedBy: row.started_by,
  visibleTo: row.visible_to ?? null,
  state: JSON.parse(row.state) as unknown,
  creditsReserved: row.credits_reserved,
  creditsSpent: row.credits_spent,
  source: row.source,
  acceptedAt: row.accepted_at,
  traceParent: row.trace_parent ?? null,
});
