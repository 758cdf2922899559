// A run's events as the port names them: what a write appends and what a reader gets back.

/** Events kept per run, at most: beyond, only a run's final event is stored. */
export const RUN_EVENTS_LIMIT = 1000;

/** The type of a run's last event: after it the stream ends. */
export const FINAL_EVENT = 'run.finished';

export interface RunEventInput {
  type: string;
  data: Record<string, unknown>;
  /** When it happened (ISO 8601); the write's time when absent. */
  at?: string;
}

export interface RunEventRow {
  seq: number;
  type: string;
  /** The event's data, as JSON text. */
  data: string;
  at: string;
}
