// A page of a workspace's runs: what the list reads take and give.
import type { RunKind, RunStatus } from './runs';

export interface RunListQuery {
  kind: RunKind;
  workspaceId: string;
  /** The reader: their own test runs, and every run a trigger or schedule started. */
  userId: string;
  targetId?: string;
  statuses?: RunStatus[];
  source?: string;
  /** accepted_at ≥ this (ISO 8601, UTC). */
  acceptedFrom?: string;
  /** accepted_at < this. */
  acceptedBefore?: string;
  /** Only ids below this one (the cursor). */
  beforeId?: string;
  limit: number;
}

export interface RunListRow {
  id: string;
  /** The run as a list item of its kind, as JSON. */
  item: string;
}
