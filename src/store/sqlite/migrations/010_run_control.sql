-- Runs that can be steered: cancelled, held for approval and resumed, followed as a stream of
-- stored events, and started idempotently.

-- SQLite cannot change a CHECK constraint in place: the runs table is rebuilt with two more
-- statuses (`awaiting_approval`: parked until its held tool calls are decided, holding no worker;
-- `cancelled`) and the columns a cancel and a parked run need. Same rows, same ids, same indexes.
CREATE TABLE runs_new (
  id                   TEXT PRIMARY KEY,
  kind                 TEXT NOT NULL CHECK (kind IN ('agent', 'workflow')),
  workspace_id         TEXT NOT NULL,
  started_by           TEXT NOT NULL,
  target_id            TEXT NOT NULL,
  target_version       INTEGER,
  status               TEXT NOT NULL CHECK (status IN ('queued', 'running', 'awaiting_approval', 'succeeded', 'failed', 'refused', 'cancelled')),
  source               TEXT NOT NULL,
  trigger_id           TEXT,
  -- An agent run's agent as its projections name it: lists and reads take these instead of
  -- parsing the snapshot (the whole document) of every run they show.
  agent_slug           TEXT,
  agent_name           TEXT,
  credits_reserved     INTEGER NOT NULL DEFAULT 0 CHECK (credits_reserved >= 0),
  credits_spent        INTEGER NOT NULL DEFAULT 0 CHECK (credits_spent >= 0),
  error                TEXT,
  accepted_at          TEXT NOT NULL,
  started_at           TEXT,
  finished_at          TEXT,
  -- Who asked to cancel, and when. A running run keeps running until its worker reaches its next
  -- step (the worker ends it as cancelled); a queued or parked one is cancelled by the same write.
  cancel_requested_at  TEXT,
  cancelled_by         TEXT,
  -- A parked run fails at this time unless its held calls are decided.
  approval_expires_at  TEXT,
  -- The large texts last: a row's leading columns (all a list shows) stay on its first page, and
  -- reading them does not walk the overflow pages of a snapshot (SQLite reads a record in order).
  request              TEXT NOT NULL,
  state                TEXT NOT NULL,
  snapshot             TEXT,
  step_agents          TEXT,
  CHECK (status != 'awaiting_approval' OR approval_expires_at IS NOT NULL)
) STRICT;
INSERT INTO runs_new (id, kind, workspace_id, started_by, target_id, target_version, status, source, request, snapshot, state,
    credits_reserved, credits_spent, error, accepted_at, started_at, finished_at, step_agents, trigger_id, agent_slug, agent_name)
  SELECT id, kind, workspace_id, started_by, target_id, target_version, status, source, request, snapshot, state,
    credits_reserved, credits_spent, error, accepted_at, started_at, finished_at, step_agents, trigger_id,
    CASE WHEN kind = 'agent' AND json_valid(snapshot) AND json_type(snapshot) = 'object' THEN json_extract(snapshot, '$.slug') END,
    CASE WHEN kind = 'agent' AND json_valid(snapshot) AND json_type(snapshot) = 'object' THEN json_extract(snapshot, '$.name') END
  FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_queued ON runs (accepted_at, id, workspace_id) WHERE status = 'queued';
CREATE INDEX runs_running ON runs (workspace_id, id) WHERE status = 'running';
CREATE INDEX runs_by_trigger ON runs (trigger_id, accepted_at) WHERE trigger_id IS NOT NULL;
CREATE INDEX runs_by_workspace ON runs (workspace_id, kind, id);
-- The expiry sweep's parked runs, and the retention sweep's finished runs, oldest first.
CREATE INDEX runs_parked ON runs (approval_expires_at) WHERE status = 'awaiting_approval';
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;

-- One row per state change of a run, numbered from 1 per run: the event stream's `id:`. Written in
-- the transaction of the change it reports; deleted with its run.
CREATE TABLE run_events (
  run_id  TEXT NOT NULL,
  seq     INTEGER NOT NULL,
  type    TEXT NOT NULL,
  data    TEXT NOT NULL,
  at      TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

-- A tool call held by an agent's approval policy, and its decision. The decision is one
-- conditional UPDATE (… WHERE decision IS NULL): whoever decides first wins, the other gets 409.
CREATE TABLE run_approvals (
  run_id        TEXT NOT NULL,
  call_id       TEXT NOT NULL,
  tool          TEXT NOT NULL,
  requested_at  TEXT NOT NULL,
  decision      TEXT CHECK (decision IN ('approve', 'reject')),
  note          TEXT,
  decided_by    TEXT,
  decided_at    TEXT,
  PRIMARY KEY (run_id, call_id)
) STRICT, WITHOUT ROWID;

-- Idempotency-Key: the first request's fingerprint and, once answered, its reply. A row without a
-- reply is a request in flight (a repeat gets 409) until `locked_until`.
CREATE TABLE idempotency_keys (
  workspace_id  TEXT NOT NULL,
  user_id       TEXT NOT NULL,
  operation     TEXT NOT NULL,
  key           TEXT NOT NULL,
  fingerprint   TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  locked_until  TEXT NOT NULL,
  status        INTEGER,
  headers       TEXT,
  body          TEXT,
  PRIMARY KEY (workspace_id, user_id, operation, key)
) STRICT;
CREATE INDEX idempotency_keys_by_time ON idempotency_keys (created_at);
