// An agent's trigger status version (see store/trigger-status.ts), raised in the transaction of
// every write that changes its triggers' live status. Read from the table every time: another
// replica's write raises it too, so a copy held here could be stale.
import type { Sql } from './database';

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

export async function statusVersion(sql: Sql, agentId: string): Promise<number> {
  const row = await sql.row<{ version: number }>('SELECT version FROM trigger_status_versions WHERE agent_id = $1', [agentId]);
  return row?.version ?? 0;
}
