// What the app-event triggers need of the store (docs/triggers.md): the triggers that listen to an
// app's events through a connection, and the kv app's events waiting to start their runs.

/** An app_event trigger's row: the document it belongs to is the truth (the service checks it). */
export interface EventListener {
  triggerId: string;
  agentId: string;
}

/** A kv event written with its change, waiting for a process to start the runs it matches. */
export interface PendingAppEvent {
  id: string;
  workspaceId: string;
  app: string;
  event: string;
  /** The payload, as JSON. */
  payload: string;
  chain: number;
  createdAt: string;
}

export interface AppEventRepository {
  /** The app_event triggers of the workspace's agents on `app` (and through `connection`, when given). */
  listeners(workspaceId: string, app: string, connection?: string): Promise<EventListener[]>;
  /**
   * Claims, until `untilMs`, at most `limit` pending events whose claim has lapsed (none, or one a
   * process that stopped held), oldest first: each is claimed by one process at a time.
   */
  claimPending(nowMs: number, untilMs: number, limit: number): Promise<PendingAppEvent[]>;
  /** The event's runs are started (or it started none): it goes. */
  finishPending(id: string): Promise<void>;
  /** Records why the trigger started nothing it would have (raising its agent's trigger status version). */
  recordError(agentId: string, triggerId: string, error: string, at: string): Promise<void>;
  /** The errors recorded of the agent's triggers, by trigger id. */
  errors(agentId: string): Promise<Map<string, { error: string; at: string }>>;
}
