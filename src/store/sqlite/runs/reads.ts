// Reads of runs on SQLite: the projection of one run (a recent one from memory), its events, the
// list pages, and when triggers last started a run.
import type { RunReads, RunRow } from '../../port';
import { runLists } from '../run-lists';
import type { RunContext } from './context';

export function sqliteRunReads(ctx: RunContext): RunReads {
  const { db, events, recent } = ctx;
  // A poll reads this many times per run: the snapshot (the whole document) stays in the database
  // (and one that is not JSON, as in a damaged row, shows as no agent rather than failing the read).
  const forProjection = db.prepare(
    `SELECT id, kind, workspace_id, started_by, target_id, target_version, status, source, trigger_id, request,
       CASE WHEN agent_slug IS NOT NULL THEN json_object('slug', agent_slug, 'name', agent_name) END AS snapshot,
       NULL AS step_agents, state, credits_reserved, credits_spent, error, accepted_at, started_at, finished_at,
       cancel_requested_at, cancelled_by, approval_expires_at, team, parent_run_id, visible_to
     FROM runs WHERE id = ?`,
  );
  const lastStarted = db.prepare(`SELECT MAX(accepted_at) FROM runs WHERE trigger_id = ? AND status != 'refused'`).pluck();
  const list = runLists(db);
  const active = db.prepare(
    `SELECT (SELECT count(*) FROM runs WHERE status = 'queued') AS queued, (SELECT count(*) FROM runs WHERE status = 'running') AS running`,
  );
  return {
    find: async (id) => recent.get(id) ?? (forProjection.get(id) as RunRow | undefined) ?? null,
    events: async (runId, seq, max) => events.after(runId, seq, max),
    lastEvent: async (runId) => events.last(runId),
    onEvents: (listener) => ctx.onEvents(listener),
    list: async (query) => list(query),
    lastStartedBy: async (triggerIds) => {
      const found = new Map<string, string>();
      for (const id of triggerIds) {
        const at = lastStarted.get(id) as string | null;
        if (at) found.set(id, at);
      }
      return found;
    },
    active: async () => active.get() as { queued: number; running: number },
  };
}
