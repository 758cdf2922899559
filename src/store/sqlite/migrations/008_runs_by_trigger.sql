-- A trigger's last run, for its live status in the agent read.
CREATE INDEX runs_by_trigger ON runs (trigger_id, accepted_at) WHERE trigger_id IS NOT NULL;

-- A counter per agent, raised in the same transaction as anything that changes its triggers' live
-- status (a trigger starts a run, a poll is decided or fails): a read compares it with the one its
-- cached reply was built from, so the live status is never stale, whichever process changed it.
CREATE TABLE trigger_status_versions (
  agent_id  TEXT PRIMARY KEY,
  version   INTEGER NOT NULL
) STRICT;
