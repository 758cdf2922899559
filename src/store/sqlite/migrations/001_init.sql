-- Workspaces, documents and connections. Documents are stored whole, as the JSON the API serves,
-- next to the columns that lookups, uniqueness and optimistic concurrency need.

CREATE TABLE workspaces (
  id          TEXT PRIMARY KEY,
  credits     INTEGER NOT NULL CHECK (credits >= 0),
  created_at  TEXT NOT NULL
) STRICT;

CREATE TABLE agents (
  id            TEXT PRIMARY KEY,
  workspace_id  TEXT NOT NULL,
  slug          TEXT NOT NULL,
  name          TEXT NOT NULL,
  status        TEXT NOT NULL CHECK (status IN ('draft', 'active', 'archived')),
  version       INTEGER NOT NULL CHECK (version >= 1),
  stamp_us      INTEGER NOT NULL,
  document      TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  UNIQUE (workspace_id, slug)
) STRICT;

-- One row per trigger: identity across replaces, and (for webhooks) the secret's hash.
CREATE TABLE agent_triggers (
  id             TEXT PRIMARY KEY,
  agent_id       TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  kind           TEXT NOT NULL,
  secret_hash    TEXT,
  secret_prefix  TEXT
) STRICT;
CREATE INDEX agent_triggers_by_agent ON agent_triggers (agent_id);

CREATE TABLE workflows (
  id            TEXT PRIMARY KEY,
  workspace_id  TEXT NOT NULL,
  slug          TEXT NOT NULL,
  name          TEXT NOT NULL,
  enabled       INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  version       INTEGER NOT NULL CHECK (version >= 1),
  stamp_us      INTEGER NOT NULL,
  document      TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  UNIQUE (workspace_id, slug)
) STRICT;

CREATE TABLE connections (
  workspace_id  TEXT NOT NULL,
  ref           TEXT NOT NULL,
  app           TEXT NOT NULL,
  label         TEXT,
  status        TEXT NOT NULL CHECK (status IN ('connected', 'disconnected', 'expired')),
  created_at    TEXT NOT NULL,
  PRIMARY KEY (workspace_id, ref)
) STRICT;
