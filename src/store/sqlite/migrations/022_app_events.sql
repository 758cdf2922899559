-- App-event triggers fire (issue 46; docs/triggers.md). An app_event trigger's row names its
-- workspace, app and connection, so a delivery finds the triggers that listen in one index read
-- (the document stays the truth: the service checks each one it finds).
ALTER TABLE agent_triggers ADD COLUMN workspace_id TEXT;
ALTER TABLE agent_triggers ADD COLUMN event_app TEXT;
ALTER TABLE agent_triggers ADD COLUMN event_connection TEXT;
UPDATE agent_triggers SET workspace_id = a.workspace_id, event_app = json_extract(t.value, '$.app'), event_connection = json_extract(t.value, '$.connection')
  FROM agents AS a
  JOIN agent_versions AS v ON v.document_id = a.id AND v.version = a.version
  JOIN agent_version_texts AS x ON x.id = v.text_id, json_each(x.document, '$.triggers') AS t
  WHERE agent_triggers.kind = 'app_event' AND a.id = agent_triggers.agent_id AND json_extract(t.value, '$.id') = agent_triggers.id;
-- Why an app_event trigger last started nothing it would have (its chain limit, its rate), and when:
-- its live status shows it while no run has started since.
ALTER TABLE agent_triggers ADD COLUMN last_error TEXT;
ALTER TABLE agent_triggers ADD COLUMN last_error_at TEXT;
CREATE INDEX agent_triggers_by_event ON agent_triggers (workspace_id, event_app, event_connection) WHERE event_app IS NOT NULL;

-- A connection of an app whose events arrive over HTTP receives them at /events/<receiver_id>
-- (random, not guessable, no secret). A rotated signing secret keeps verifying, sealed, until
-- previous_until_ms.
ALTER TABLE connections ADD COLUMN receiver_id TEXT;
ALTER TABLE connections ADD COLUMN previous_sealed TEXT;
ALTER TABLE connections ADD COLUMN previous_until_ms INTEGER;
CREATE UNIQUE INDEX connections_by_receiver ON connections (receiver_id) WHERE receiver_id IS NOT NULL;

-- The kv app's events, written in the transaction of the change when a trigger of the workspace
-- listens, and turned into runs by any process (a claim with a lease; each trigger's run is kept
-- once by the delivery row of its (trigger, event id), so a second dispatch starts nothing).
-- `chain`: how many kv events led to this one (a run started by an event that writes a key).
CREATE TABLE app_events_pending (
  id                TEXT PRIMARY KEY,
  workspace_id      TEXT NOT NULL,
  app               TEXT NOT NULL,
  event             TEXT NOT NULL,
  payload           TEXT NOT NULL,
  chain             INTEGER NOT NULL,
  created_at        TEXT NOT NULL,
  claimed_until_ms  INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX app_events_pending_by_claim ON app_events_pending (claimed_until_ms);
