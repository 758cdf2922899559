-- The workspaces' own apps (issue 44), each backed by an MCP server: its settings as written
-- (JSON: kind, slug, name, description, mcp) and the tools its last successful refresh found (JSON:
-- the catalog's tool definitions). The built-in apps are code (src/apps/builtin/), not rows.
CREATE TABLE workspace_apps (
  workspace_id   TEXT NOT NULL,
  slug           TEXT NOT NULL,
  settings       TEXT NOT NULL,
  tools          TEXT NOT NULL DEFAULT '[]',
  server         TEXT,
  refreshed_at   TEXT,
  refresh_error  TEXT,
  stamp_us       INTEGER NOT NULL,
  created_at     TEXT NOT NULL,
  PRIMARY KEY (workspace_id, slug)
) STRICT;

-- The registry's look at whether a workspace's apps changed (count and latest stamp) reads this
-- index alone, never the rows, whose tools may fill overflow pages.
CREATE INDEX workspace_apps_stamps ON workspace_apps (workspace_id, stamp_us);

-- A connection holds the credentials its calls send, sealed by the service's secret box (never in
-- clear), what of them a read may show, and its last check. An OAuth 2.0 access token fetched with
-- its client credentials is kept sealed until it expires; `renewing_until_ms` is the claim of the
-- one process renewing it.
ALTER TABLE connections ADD COLUMN credentials_shown TEXT NOT NULL DEFAULT '{"kind":"none"}';
ALTER TABLE connections ADD COLUMN credentials_sealed TEXT;
ALTER TABLE connections ADD COLUMN last_error TEXT;
ALTER TABLE connections ADD COLUMN tested_at TEXT;
ALTER TABLE connections ADD COLUMN stamp_us INTEGER NOT NULL DEFAULT 0;
ALTER TABLE connections ADD COLUMN token_sealed TEXT;
ALTER TABLE connections ADD COLUMN token_expires_ms INTEGER;
ALTER TABLE connections ADD COLUMN renewing_until_ms INTEGER;
-- Existing connections get a stamp (their ETag) from when this ran.
UPDATE connections SET stamp_us = CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER);
