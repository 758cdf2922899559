-- The webhook receiver: what it needs to answer a delivery, each decision a row.

-- Webhook triggers gained `signing` (none | standard-webhooks); stored documents get `none`.
UPDATE agents SET document = json_set(document, '$.triggers', (
    SELECT json_group_array(CASE
      WHEN json_extract(t.value, '$.kind') = 'webhook' AND json_type(t.value, '$.signing') IS NULL
      THEN json_insert(t.value, '$.signing', 'none') ELSE json(t.value) END ORDER BY t.key)
    FROM json_each(agents.document, '$.triggers') AS t))
  WHERE EXISTS (SELECT 1 FROM json_each(agents.document, '$.triggers') AS t WHERE json_extract(t.value, '$.kind') = 'webhook');

-- A signed trigger's Standard Webhooks key (`whsec_…`). Verifying an HMAC needs the key itself, so
-- this one secret cannot be kept as a hash; it is never returned after its one showing, never logged.
ALTER TABLE agent_triggers ADD COLUMN signing_secret TEXT;

-- URL secrets that no longer open their trigger: replaced by a rotation or dropped with their
-- trigger. A delivery to one is 410 Gone (the sender should disable the endpoint), not 404.
CREATE TABLE retired_webhook_secrets (
  secret_hash  TEXT PRIMARY KEY,
  trigger_id   TEXT NOT NULL,
  reason       TEXT NOT NULL CHECK (reason IN ('rotated', 'dropped')),
  retired_at   TEXT NOT NULL
) STRICT;

-- One row per delivery id (webhook-id or Idempotency-Key) per trigger, written in the transaction
-- that queues (or refuses) its run: the primary key is what makes a repeated delivery start nothing.
CREATE TABLE webhook_deliveries (
  trigger_id    TEXT NOT NULL,
  delivery_key  TEXT NOT NULL,
  run_id        TEXT NOT NULL,
  http_status   INTEGER NOT NULL,
  received_at   TEXT NOT NULL,
  PRIMARY KEY (trigger_id, delivery_key)
) STRICT;
CREATE INDEX webhook_deliveries_by_time ON webhook_deliveries (received_at);

-- Deliveries per trigger in the current minute (the rate limit), counted by one conditional upsert.
CREATE TABLE trigger_rate_windows (
  trigger_id    TEXT PRIMARY KEY,
  window_start  INTEGER NOT NULL,
  count         INTEGER NOT NULL
) STRICT;

-- The trigger that started a run (webhook, poll), or null.
ALTER TABLE runs ADD COLUMN trigger_id TEXT;
