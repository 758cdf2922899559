// Reads of runs on PostgreSQL: every one asks the database (another replica may have written). A
// run's projection is read in one query for the reads that arrive together (coalesced-lookup.ts):
// pollers of many runs cost the database one query per round trip, not one each.
import type { RunReads, RunRow } from '../../port';
import { CoalescedLookup } from '../coalesced-lookup';
import { pgRunLists } from '../run-lists';
import type { PgRunContext } from './context';

/** What `find` returns: the projection's rows, without the documents (see RunReads.find). */
const PROJECTION_SQL = `SELECT id, kind, workspace_id, started_by, target_id, target_version, status, source, trigger_id, request,
    CASE WHEN agent_slug IS NOT NULL THEN json_build_object('slug', agent_slug, 'name', agent_name)::text END AS snapshot,
    NULL::text AS step_agents, state, credits_reserved, credits_spent, error, accepted_at, started_at, finished_at,
    cancel_requested_at, cancelled_by, approval_expires_at, team, parent_run_id, visible_to
  FROM runs WHERE id = ANY($1::text[])`;

export function pgRunReads(ctx: PgRunContext): RunReads {
  const { db, events } = ctx;
  const list = pgRunLists(db);
  const projections = new CoalescedLookup<null, RunRow>(async (batch) => {
    const rows = await db.rows<RunRow>(PROJECTION_SQL, [[...batch.keys()]]);
    return new Map(rows.map((r) => [r.id, r]));
  });
  return {
    find: async (id) => (await projections.get(id, null)) ?? null,
    events: (runId, seq, max) => events.after(db, runId, seq, max),
    lastEvent: (runId) => events.last(db, runId),
    onEvents: (listener) => ctx.onEvents(listener),
    list: async (query) => list(query),
    lastStartedBy: async (triggerIds) => {
      const rows = await db.rows<{ trigger_id: string; at: string }>(
        `SELECT trigger_id, MAX(accepted_at) AS at FROM runs WHERE trigger_id = ANY($1::text[]) AND status != 'refused' GROUP BY trigger_id`,
        [triggerIds],
      );
      return new Map(rows.map((r) => [r.trigger_id, r.at]));
    },
    active: async () => {
      const [row] = await db.rows<{ queued: string; running: string }>(
        `SELECT (SELECT count(*) FROM runs WHERE status = 'queued') AS queued, (SELECT count(*) FROM runs WHERE status = 'running') AS running`,
        [],
      );
      return { queued: Number(row?.queued ?? 0), running: Number(row?.running ?? 0) };
    },
  };
}
