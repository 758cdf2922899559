-- The workspaces' own apps (issue 44), each backed by an MCP server: its settings as written
-- (JSON: kind, slug, name, description, mcp) and the tools its last successful refresh found (JSON:
-- the catalog's tool definitions). The built-in apps are code (src/apps/builtin/), not rows. Both
-- are text, as documents are: sent and read back as written.
CREATE TABLE workspace_apps (
  workspace_id   text COLLATE "C" NOT NULL,
  slug           text COLLATE "C" NOT NULL,
  settings       text NOT NULL,
  tools          text NOT NULL DEFAULT '[]',
  server         text,
  refreshed_at   text,
  refresh_error  text,
  stamp_us       bigint NOT NULL,
  created_at     text NOT NULL,
  PRIMARY KEY (workspace_id, slug)
);

-- The registry's look at whether a workspace's apps changed (count and latest stamp) reads this
-- index alone (an index-only scan), never the rows.
CREATE INDEX workspace_apps_stamps ON workspace_apps (workspace_id, stamp_us);

-- A connection holds the credentials its calls send, sealed by the service's secret box (never in
-- clear), what of them a read may show, and its last check. An OAuth 2.0 access token fetched with
-- its client credentials is kept sealed until it expires; `renewing_until_ms` is the claim of the
-- one replica renewing it.
ALTER TABLE connections ADD COLUMN credentials_shown text NOT NULL DEFAULT '{"kind":"none"}';
ALTER TABLE connections ADD COLUMN credentials_sealed text;
ALTER TABLE connections ADD COLUMN last_error text;
ALTER TABLE connections ADD COLUMN tested_at text;
ALTER TABLE connections ADD COLUMN stamp_us bigint NOT NULL DEFAULT 0;
ALTER TABLE connections ADD COLUMN token_sealed text;
ALTER TABLE connections ADD COLUMN token_expires_ms bigint;
ALTER TABLE connections ADD COLUMN renewing_until_ms bigint;
UPDATE connections SET stamp_us = (extract(epoch from clock_timestamp()) * 1000000)::bigint;
