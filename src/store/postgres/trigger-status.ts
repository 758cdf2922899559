// An agent's trigger status version (see store/trigger-status.ts), raised in the transaction of
// every write that changes its triggers' live status. Read from the table at every read: another
// replica's write raises it too, so a copy held here could be stale.
import { CoalescedLookup } from './coalesced-lookup';
import type { PgDatabase, Sql } from './database';

/** Raises the agent's version (inside a write's transaction). */
export async function bumpAgentStatus(sql: Sql, agentId: string): Promise<void> {
  await sql.count(
    `INSERT INTO trigger_status_versions (agent_id, version) VALUES ($1, 1)
     ON CONFLICT (agent_id) DO UPDATE SET version = trigger_status_versions.version + 1`,
    [agentId],
  );
}

/** Raises the version of the agent that owns this poll schedule, if it is one. */
export async function bumpPollStatus(sql: Sql, scheduleId: string): Promise<void> {
  await sql.count(
    `INSERT INTO trigger_status_versions (agent_id, version) SELECT owner_id, 1 FROM schedules WHERE id = $1 AND kind = 'poll'
     ON CONFLICT (agent_id) DO UPDATE SET version = trigger_status_versions.version + 1`,
    [scheduleId],
  );
}

/**
 * An agent's version as the database holds it now: one coalesced query for the reads that arrive
 * together (coalesced-lookup.ts), sent after each of them arrived.
 */
export function statusVersions(db: PgDatabase): (agentId: string) => Promise<number> {
  const current = new CoalescedLookup<null, number>(async (batch) => {
    const rows = await db.rows<{ agent_id: string; version: number }>(
      'SELECT agent_id, version FROM trigger_status_versions WHERE agent_id = ANY($1::text[])',
      [[...batch.keys()]],
    );
    return new Map(rows.map((r) => [r.agent_id, r.version]));
  });
  return async (agentId) => (await current.get(agentId, null)) ?? 0;
}
