// An agent's trigger status version (migration 008): raised in the same transaction as anything
// that changes its triggers' live status, so a read knows whether the view it built is still
// current. The versions are also held in memory, changed by those same writes (this process is the
// only one serving its database file, store/serve-lock.ts), so a read asks no query; a group that
// fails to commit forgets them all, and the next reads take them from the table.
import type { Db } from './database';
import type { GroupCommit } from './group-commit';

export interface TriggerStatusVersions {
  /** Raises the agent's version (inside a write's transaction). */
  bumpAgent(agentId: string): void;
  /** Raises the version of the agent that owns this poll schedule, if it is one. */
  bumpPoll(scheduleId: string): void;
  current(agentId: string): number;
}

const perDatabase = new WeakMap<Db, TriggerStatusVersions>();

export function triggerStatusVersions(db: Db, commit: GroupCommit): TriggerStatusVersions {
  let versions = perDatabase.get(db);
  if (versions) return versions;
  const known = new Map<string, number>();
  commit.onRollback(() => known.clear());
  const byAgent = db.prepare(
    'INSERT INTO trigger_status_versions (agent_id, version) VALUES (?, 1) ON CONFLICT (agent_id) DO UPDATE SET version = version + 1 RETURNING agent_id, version',
  );
  const byPoll = db.prepare(
    `INSERT INTO trigger_status_versions (agent_id, version) SELECT owner_id, 1 FROM schedules WHERE id = ? AND kind = 'poll'
     ON CONFLICT (agent_id) DO UPDATE SET version = version + 1 RETURNING agent_id, version`,
  );
  const read = db.prepare('SELECT version FROM trigger_status_versions WHERE agent_id = ?').pluck();
  const remember = (row: { agent_id: string; version: number } | undefined) => row && known.set(row.agent_id, row.version);
  versions = {
    bumpAgent: (agentId) => void remember(byAgent.get(agentId) as { agent_id: string; version: number }),
    bumpPoll: (scheduleId) => void remember(byPoll.get(scheduleId) as { agent_id: string; version: number } | undefined),
    current(agentId) {
      let version = known.get(agentId);
      if (version === undefined) {
        version = (read.get(agentId) as number | undefined) ?? 0;
        known.set(agentId, version);
      }
      return version;
    },
  };
  perDatabase.set(db, versions);
  return versions;
}
