-- Test runs and the per-workspace key-value store the kv tools use.

CREATE TABLE runs (
  id                TEXT PRIMARY KEY,
  kind              TEXT NOT NULL CHECK (kind IN ('agent', 'workflow')),
  workspace_id      TEXT NOT NULL,
  started_by        TEXT NOT NULL,
  target_id         TEXT NOT NULL,            -- the agent's or workflow's id
  target_version    INTEGER,                  -- the document version that runs
  status            TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'refused')),
  source            TEXT NOT NULL,
  request           TEXT NOT NULL,            -- JSON: { prompt } or { input }
  snapshot          TEXT,                     -- JSON: the document as it was when the run was accepted
  state             TEXT NOT NULL,            -- JSON: what the projection shows of the run's progress
  credits_reserved  INTEGER NOT NULL DEFAULT 0 CHECK (credits_reserved >= 0),
  credits_spent     INTEGER NOT NULL DEFAULT 0 CHECK (credits_spent >= 0),
  error             TEXT,
  accepted_at       TEXT NOT NULL,
  started_at        TEXT,
  finished_at       TEXT
) STRICT;
CREATE INDEX runs_pending ON runs (status, accepted_at) WHERE status IN ('queued', 'running');

CREATE TABLE kv_entries (
  workspace_id  TEXT NOT NULL,
  key           TEXT NOT NULL,
  value         TEXT NOT NULL,
  updated_at    TEXT NOT NULL,
  PRIMARY KEY (workspace_id, key)
) STRICT;
