-- App-event triggers fire (issue 46; docs/triggers.md). An app_event trigger's row names its
-- workspace, app and connection, so a delivery finds the triggers that listen in one index read
-- (the document stays the truth: the service checks each one it finds).
ALTER TABLE agent_triggers ADD COLUMN workspace_id text COLLATE "C";
ALTER TABLE agent_triggers ADD COLUMN event_app text COLLATE "C";
ALTER TABLE agent_triggers ADD COLUMN event_connection text COLLATE "C";
UPDATE agent_triggers AS r SET workspace_id = a.workspace_id, event_app = t.value->>'app', event_connection = t.value->>'connection'
  FROM agents AS a, jsonb_array_elements(a.document::jsonb->'triggers') AS t (value)
  WHERE r.kind = 'app_event' AND a.id = r.agent_id AND t.value->>'id' = r.id;
-- Why an app_event trigger last started nothing it would have (its chain limit, its rate), and when:
-- its live status shows it while no run has started since.
ALTER TABLE agent_triggers ADD COLUMN last_error text;
ALTER TABLE agent_triggers ADD COLUMN last_error_at text;
CREATE INDEX agent_triggers_by_event ON agent_triggers (workspace_id, event_app, event_connection) WHERE event_app IS NOT NULL;

-- A connection of an app whose events arrive over HTTP receives them at /events/<receiver_id>
-- (random, not guessable, no secret). A rotated signing secret keeps verifying, sealed, until
-- previous_until_ms.
ALTER TABLE connections ADD COLUMN receiver_id text COLLATE "C";
ALTER TABLE connections ADD COLUMN previous_sealed text;
ALTER TABLE connections ADD COLUMN previous_until_ms bigint;
CREATE UNIQUE INDEX connections_by_receiver ON connections (receiver_id) WHERE receiver_id IS NOT NULL;

-- The kv app's events, written in the transaction of the change when a trigger of the workspace
-- listens, and turned into runs by any replica (a claim with a lease; each trigger's run is kept
-- once by the delivery row of its (trigger, event id), so a second dispatch starts nothing).
-- `chain`: how many kv events led to this one (a run started by an event that writes a key).
CREATE TABLE app_events_pending (
  id                text COLLATE "C" PRIMARY KEY,
  workspace_id      text COLLATE "C" NOT NULL,
  app               text NOT NULL,
  event             text NOT NULL,
  payload           text NOT NULL,
  chain             integer NOT NULL,
  created_at        text NOT NULL,
  claimed_until_ms  bigint NOT NULL DEFAULT 0
);
CREATE INDEX app_events_pending_by_claim ON app_events_pending (claimed_until_ms);
