-- The PostgreSQL schema: the tables of the SQLite migrations 001–011 (and the issuer's key) as they stand after them, in
-- one step (a PostgreSQL database starts here). Later changes are numbered migrations per dialect.
--
-- Conventions shared with the SQLite schema, so that both adapters read rows alike:
--   * times are ISO 8601 UTC text ('2026-11-21T10:00:00.123Z'), which sorts as the instants do;
--   * document stamps (stamp_us) are microseconds and due times (next_due_at, due_at) milliseconds
--     since the epoch, as bigint (read as numbers: both fit in 2^53);
--   * JSON is kept as the text it was written as (`text`, not jsonb: a read sends it as is);
--   * text that is ordered or ranged over (slugs, keys, ids) compares byte-wise (COLLATE "C"), as
--     SQLite compares it, whatever the database's default collation.

CREATE TABLE workspaces (
  id          text COLLATE "C" PRIMARY KEY,
  credits     bigint NOT NULL CHECK (credits >= 0),
  created_at  text NOT NULL
);

CREATE TABLE agents (
  id            text COLLATE "C" PRIMARY KEY,
  workspace_id  text COLLATE "C" NOT NULL,
  slug          text COLLATE "C" NOT NULL,
  name          text NOT NULL,
  status        text NOT NULL CHECK (status IN ('draft', 'active', 'archived')),
  version       integer NOT NULL CHECK (version >= 1),
  stamp_us      bigint NOT NULL,
  created_at    text NOT NULL,
  document      text NOT NULL,
  UNIQUE (workspace_id, slug)
);

CREATE TABLE agent_triggers (
  id              text COLLATE "C" PRIMARY KEY,
  agent_id        text COLLATE "C" NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  kind            text NOT NULL,
  secret_hash     text,
  secret_prefix   text,
  signing_secret  text
);
CREATE INDEX agent_triggers_by_agent ON agent_triggers (agent_id);

CREATE TABLE workflows (
  id            text COLLATE "C" PRIMARY KEY,
  workspace_id  text COLLATE "C" NOT NULL,
  slug          text COLLATE "C" NOT NULL,
  name          text NOT NULL,
  enabled       smallint NOT NULL CHECK (enabled IN (0, 1)),
  version       integer NOT NULL CHECK (version >= 1),
  stamp_us      bigint NOT NULL,
  created_at    text NOT NULL,
  document      text NOT NULL,
  UNIQUE (workspace_id, slug)
);

CREATE TABLE connections (
  workspace_id  text COLLATE "C" NOT NULL,
  ref           text COLLATE "C" NOT NULL,
  app           text NOT NULL,
  label         text,
  status        text NOT NULL CHECK (status IN ('connected', 'disconnected', 'expired')),
  created_at    text NOT NULL,
  PRIMARY KEY (workspace_id, ref)
);

CREATE TABLE kv_entries (
  workspace_id  text COLLATE "C" NOT NULL,
  key           text COLLATE "C" NOT NULL,
  value         text NOT NULL,
  updated_at    text NOT NULL,
  PRIMARY KEY (workspace_id, key)
);

CREATE TABLE retired_webhook_secrets (
  secret_hash  text PRIMARY KEY,
  trigger_id   text NOT NULL,
  reason       text NOT NULL CHECK (reason IN ('rotated', 'dropped')),
  retired_at   text NOT NULL
);

CREATE TABLE webhook_deliveries (
  trigger_id    text COLLATE "C" NOT NULL,
  delivery_key  text COLLATE "C" NOT NULL,
  run_id        text NOT NULL,
  http_status   integer NOT NULL,
  received_at   text NOT NULL,
  PRIMARY KEY (trigger_id, delivery_key)
);
CREATE INDEX webhook_deliveries_by_time ON webhook_deliveries (received_at);

CREATE TABLE trigger_rate_windows (
  trigger_id    text PRIMARY KEY,
  window_start  bigint NOT NULL,
  count         integer NOT NULL
);

CREATE TABLE schedules (
  id                text COLLATE "C" PRIMARY KEY,   -- agent:<id> | workflow:<id> | poll:<trigger id>
  kind              text NOT NULL CHECK (kind IN ('agent', 'workflow', 'poll')),
  workspace_id      text NOT NULL,
  owner_id          text NOT NULL,                  -- the agent or workflow
  trigger_id        text,                           -- a poll's trigger
  cron              text NOT NULL,
  timezone          text NOT NULL,
  active            smallint NOT NULL CHECK (active IN (0, 1)),
  next_due_at       bigint,                         -- ms since the epoch; null while inactive
  detector          text,                           -- a poll's tool and args (JSON)
  last_output_hash  text,                           -- a poll's last detector output seen (SHA-256)
  last_fired_at     text,
  last_run_id       text,
  last_error        text,
  failures          integer NOT NULL DEFAULT 0      -- a poll's detector failures in a row (back-off)
);
CREATE INDEX schedules_due ON schedules (next_due_at) WHERE next_due_at IS NOT NULL;
CREATE INDEX schedules_by_owner ON schedules (owner_id);

CREATE TABLE schedule_fires (
  schedule_id  text NOT NULL,
  due_at       bigint NOT NULL,
  outcome      text NOT NULL CHECK (outcome IN ('fired', 'refused', 'missed', 'overlap', 'failed', 'polling', 'baseline', 'unchanged')),
  run_id       text,
  detail       text,
  recorded_at  text NOT NULL,
  PRIMARY KEY (schedule_id, due_at)
);

CREATE TABLE trigger_status_versions (
  agent_id  text PRIMARY KEY,
  version   bigint NOT NULL
);

CREATE TABLE runs (
  id                   text COLLATE "C" PRIMARY KEY,
  kind                 text NOT NULL CHECK (kind IN ('agent', 'workflow')),
  workspace_id         text COLLATE "C" NOT NULL,
  started_by           text NOT NULL,
  target_id            text COLLATE "C" NOT NULL,
  target_version       integer,
  status               text NOT NULL CHECK (status IN ('queued', 'running', 'awaiting_approval', 'succeeded', 'failed', 'refused', 'cancelled')),
  source               text NOT NULL,
  trigger_id           text,
  agent_slug           text,
  agent_name           text,
  credits_reserved     bigint NOT NULL DEFAULT 0 CHECK (credits_reserved >= 0),
  credits_spent        bigint NOT NULL DEFAULT 0 CHECK (credits_spent >= 0),
  error                text,
  accepted_at          text NOT NULL,
  started_at           text,
  finished_at          text,
  cancel_requested_at  text,
  cancelled_by         text,
  approval_expires_at  text,
  -- The worker executing a running run, and until when its claim holds unless renewed: another
  -- replica takes the run over only once this has passed (by the database's clock).
  lease_owner          text,
  lease_expires_at     timestamptz,
  request              text NOT NULL,
  state                text NOT NULL,
  snapshot             text,
  step_agents          text,
  CHECK (status != 'awaiting_approval' OR approval_expires_at IS NOT NULL)
);
CREATE INDEX runs_queued ON runs (accepted_at, id, workspace_id) WHERE status = 'queued';
CREATE INDEX runs_running ON runs (workspace_id, id) WHERE status = 'running';
CREATE INDEX runs_leases ON runs (lease_expires_at) WHERE status = 'running';
CREATE INDEX runs_by_trigger ON runs (trigger_id, accepted_at) WHERE trigger_id IS NOT NULL;
CREATE INDEX runs_by_workspace ON runs (workspace_id, kind, id);
CREATE INDEX runs_parked ON runs (approval_expires_at) WHERE status = 'awaiting_approval';
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE run_events (
  run_id  text COLLATE "C" NOT NULL,
  seq     integer NOT NULL,
  type    text NOT NULL,
  data    text NOT NULL,
  at      text NOT NULL,
  PRIMARY KEY (run_id, seq)
);

CREATE TABLE run_approvals (
  run_id        text COLLATE "C" NOT NULL,
  call_id       text COLLATE "C" NOT NULL,
  tool          text NOT NULL,
  requested_at  text NOT NULL,
  decision      text CHECK (decision IN ('approve', 'reject')),
  note          text,
  decided_by    text,
  decided_at    text,
  PRIMARY KEY (run_id, call_id)
);

CREATE TABLE idempotency_keys (
  workspace_id  text COLLATE "C" NOT NULL,
  user_id       text COLLATE "C" NOT NULL,
  operation     text COLLATE "C" NOT NULL,
  key           text COLLATE "C" NOT NULL,
  fingerprint   text NOT NULL,
  created_at    text NOT NULL,
  locked_until  text NOT NULL,
  status        integer,
  headers       text,
  body          text,
  PRIMARY KEY (workspace_id, user_id, operation, key)
);
CREATE INDEX idempotency_keys_by_time ON idempotency_keys (created_at);

-- The built-in issuer's signing key (PKCS#8 PEM), shared by every replica so that a token minted
-- by one verifies on all: the first to start creates it (one row per name: of concurrent creators,
-- one insert wins and the others read its key). SQLite keeps it in a file beside the database.
CREATE TABLE issuer_keys (
  name        text PRIMARY KEY,
  pem         text NOT NULL,
  created_at  text NOT NULL
);
