-- Event subscriptions (issue 49, docs/events.md): endpoints that receive the workspace's events,
-- and the outbox their deliveries are sent from.
--
-- An event and its deliveries are written by the triggers below, inside the statement (so the
-- transaction) of the change that caused it: a change that rolled back leaves none, and every
-- write path (the API, the runner, the schedulers, a restore, one added later) records them
-- without knowing. A change of a workspace that subscribes to nothing costs one index probe.

CREATE TABLE event_endpoints (
  id                 TEXT PRIMARY KEY,
  workspace_id       TEXT NOT NULL,
  url                TEXT NOT NULL,
  event_types        TEXT NOT NULL,            -- JSON array as written
  description        TEXT,
  status             TEXT NOT NULL CHECK (status IN ('enabled', 'disabled')),
  disabled_reason    TEXT,
  -- The spaces whose events it receives: every space (its writer was an administrator), or the
  -- workspace's own and these teams (a JSON array of slugs).
  all_spaces         INTEGER NOT NULL CHECK (all_spaces IN (0, 1)),
  teams              TEXT NOT NULL,
  secret_sealed      TEXT NOT NULL,
  secret_prefix      TEXT NOT NULL,
  previous_sealed    TEXT,
  previous_until_ms  INTEGER,
  -- The first failed attempt since the last success: an endpoint failing for too long is disabled.
  failing_since_ms   INTEGER,
  created_at         TEXT NOT NULL,
  stamp_us           INTEGER NOT NULL
) STRICT;
CREATE INDEX event_endpoints_by_workspace ON event_endpoints (workspace_id, id);

-- One row per type an endpoint receives ('*': all), while it is enabled: what the triggers probe.
CREATE TABLE event_subscriptions (
  workspace_id  TEXT NOT NULL,
  event_type    TEXT NOT NULL,
  endpoint_id   TEXT NOT NULL REFERENCES event_endpoints (id) ON DELETE CASCADE,
  PRIMARY KEY (workspace_id, event_type, endpoint_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX event_subscriptions_by_endpoint ON event_subscriptions (endpoint_id);

-- The body each delivery of an event sends, as signed: written once, never changed.
CREATE TABLE events (
  id            TEXT PRIMARY KEY,              -- evt_<32 hex digits>: the webhook-id
  workspace_id  TEXT NOT NULL,
  type          TEXT NOT NULL,
  body          TEXT NOT NULL,
  created_ms    INTEGER NOT NULL
) STRICT;
CREATE INDEX events_by_time ON events (created_ms);

-- Each subject's last event number (`data.sequence`).
CREATE TABLE event_sequences (
  subject  TEXT PRIMARY KEY,                   -- run:<id>, agent:<id>, workflow:<id>, eval:<id>, message:<id>, endpoint:<id>
  seq      INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- One event to one endpoint. `attempts` counts the attempts claimed (the claim that made one is the
-- only one that may record it); `log` keeps the last 20 (JSON array). `next_attempt_ms` is when it
-- is due: a pending one's next attempt, a delivering one's lease (a lapsed claim is due again), so
-- the claim reads only what is due. Disabling an endpoint fails its pending deliveries.
CREATE TABLE event_deliveries (
  id               TEXT PRIMARY KEY,           -- a UUIDv7: the list's newest-first keyset
  endpoint_id      TEXT NOT NULL REFERENCES event_endpoints (id) ON DELETE CASCADE,
  workspace_id     TEXT NOT NULL,
  event_id         TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  event_type       TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  -- A redelivery: one attempt, whose failure is final.
  manual           INTEGER NOT NULL DEFAULT 0 CHECK (manual IN (0, 1)),
  next_attempt_ms  INTEGER,
  finished_ms      INTEGER,
  created_ms       INTEGER NOT NULL,
  log              TEXT NOT NULL DEFAULT '[]'
) STRICT;
CREATE INDEX event_deliveries_due ON event_deliveries (next_attempt_ms) WHERE status IN ('pending', 'delivering');
CREATE INDEX event_deliveries_busy ON event_deliveries (endpoint_id, next_attempt_ms) WHERE status = 'delivering';
CREATE INDEX event_deliveries_by_endpoint ON event_deliveries (endpoint_id, id);
CREATE INDEX event_deliveries_by_event ON event_deliveries (event_id);
CREATE INDEX event_deliveries_finished ON event_deliveries (finished_ms) WHERE finished_ms IS NOT NULL;

-- Where the triggers below hand an event in: a view whose insert numbers the event in its subject,
-- writes its body and a delivery for every enabled endpoint of the workspace that subscribes to its
-- type and sees its space (team: null is the workspace's own space).
CREATE VIEW event_intake (workspace_id, type, subject, team, data) AS SELECT NULL, NULL, NULL, NULL, NULL WHERE 0;

CREATE TRIGGER event_intake_insert INSTEAD OF INSERT ON event_intake
BEGIN
  INSERT INTO event_sequences (subject, seq) VALUES (NEW.subject, 1) ON CONFLICT (subject) DO UPDATE SET seq = seq + 1;
  INSERT INTO events (id, workspace_id, type, body, created_ms)
    VALUES ('evt_' || lower(hex(randomblob(16))), NEW.workspace_id, NEW.type,
      json_object('type', NEW.type, 'timestamp', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
        'data', json_set(NEW.data, '$.sequence', (SELECT seq FROM event_sequences WHERE subject = NEW.subject))),
      CAST(unixepoch('subsec') * 1000 AS INTEGER));
  -- The delivery's id is a UUIDv7 (the event's millisecond, then random bits), so the list's keyset is time-ordered.
  INSERT INTO event_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status, next_attempt_ms, created_ms)
    SELECT
      substr(printf('%012x', ev.created_ms), 1, 8) || '-' || substr(printf('%012x', ev.created_ms), 9, 4)
        || '-7' || substr(lower(hex(randomblob(2))), 2, 3) || '-' || substr('89ab', 1 + abs(random() % 4), 1)
        || substr(lower(hex(randomblob(2))), 2, 3) || '-' || lower(hex(randomblob(6))),
      e.id, NEW.workspace_id, ev.id, NEW.type, 'pending', ev.created_ms, ev.created_ms
    FROM event_endpoints AS e
    JOIN events AS ev ON ev.rowid = last_insert_rowid()
    WHERE e.workspace_id = NEW.workspace_id AND e.status = 'enabled'
      AND EXISTS (SELECT 1 FROM event_subscriptions AS s WHERE s.workspace_id = NEW.workspace_id AND s.event_type IN (NEW.type, '*') AND s.endpoint_id = e.id)
      AND (NEW.team IS NULL OR e.all_spaces = 1 OR EXISTS (SELECT 1 FROM json_each(e.teams) WHERE value = NEW.team));
END;

-- What causes events. Each trigger fires only when the workspace subscribes to the type (or to '*').
-- A status change writes a version too: it is `agent.status_changed`, not also `agent.replaced`
-- (a replace never changes the status).
CREATE TRIGGER run_event_inserted AFTER INSERT ON runs
WHEN EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id
  AND event_type IN ('*', CASE NEW.status WHEN 'queued' THEN 'run.queued' WHEN 'running' THEN 'run.started' WHEN 'awaiting_approval' THEN 'run.awaiting_approval' ELSE 'run.finished' END))
BEGIN
  INSERT INTO event_intake (workspace_id, type, subject, team, data) VALUES (NEW.workspace_id,
    CASE NEW.status WHEN 'queued' THEN 'run.queued' WHEN 'running' THEN 'run.started' WHEN 'awaiting_approval' THEN 'run.awaiting_approval' ELSE 'run.finished' END,
    'run:' || NEW.id, NEW.team,
    json_object('run_id', NEW.id, 'kind', NEW.kind, CASE NEW.kind WHEN 'agent' THEN 'agent_id' ELSE 'workflow_id' END, NEW.target_id,
      'version', NEW.target_version, 'status', NEW.status, 'source', NEW.source, 'test', json(CASE WHEN NEW.source = 'test' THEN 'true' ELSE 'false' END)));
END;

CREATE TRIGGER run_event_status AFTER UPDATE OF status ON runs
WHEN NEW.status IS NOT OLD.status AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id
  AND event_type IN ('*', CASE NEW.status WHEN 'queued' THEN 'run.queued' WHEN 'running' THEN 'run.started' WHEN 'awaiting_approval' THEN 'run.awaiting_approval' ELSE 'run.finished' END))
BEGIN
  INSERT INTO event_intake (workspace_id, type, subject, team, data) VALUES (NEW.workspace_id,
    CASE NEW.status WHEN 'queued' THEN 'run.queued' WHEN 'running' THEN 'run.started' WHEN 'awaiting_approval' THEN 'run.awaiting_approval' ELSE 'run.finished' END,
    'run:' || NEW.id, NEW.team,
    json_object('run_id', NEW.id, 'kind', NEW.kind, CASE NEW.kind WHEN 'agent' THEN 'agent_id' ELSE 'workflow_id' END, NEW.target_id,
      'version', NEW.target_version, 'status', NEW.status, 'source', NEW.source, 'test', json(CASE WHEN NEW.source = 'test' THEN 'true' ELSE 'false' END)));
END;

CREATE TRIGGER agent_event_created AFTER INSERT ON agents
WHEN EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'agent.created'))
BEGIN
  INSERT INTO event_intake (workspace_id, type, subject, team, data) VALUES (NEW.workspace_id, 'agent.created', 'agent:' || NEW.id, NEW.team,
    json_object('agent_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version, 'status', NEW.status));
END;

CREATE TRIGGER agent_event_replaced AFTER UPDATE OF version ON agents
WHEN NEW.version > OLD.version AND NEW.status IS OLD.status
  AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'agent.replaced'))
BEGIN
  INSERT INTO event_intake (workspace_id, type, subject, team, data) VALUES (NEW.workspace_id, 'agent.replaced', 'agent:' || NEW.id, NEW.team,
    json_object('agent_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version, 'status', NEW.status));
END;

CREATE TRIGGER agent_event_status AFTER UPDATE OF status ON agents
WHEN NEW.status IS NOT OLD.status AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'agent.status_changed'))
BEGIN
  INSERT INTO event_intake (workspace_id, type, subject, team, data) VALUES (NEW.workspace_id, 'agent.status_changed', 'agent:' || NEW.id, NEW.team,
    json_object('agent_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version, 'status', NEW.status, 'previous_status', OLD.status));
END;

CREATE TRIGGER workflow_event_created AFTER INSERT ON workflows
WHEN EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'workflow.created'))
BEGIN
  INSERT INTO event_intake (workspace_id, type, subject, team, data) VALUES (NEW.workspace_id, 'workflow.created', 'workflow:' || NEW.id, NEW.team,
    json_object('workflow_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version));
END;

CREATE TRIGGER workflow_event_replaced AFTER UPDATE OF version ON workflows
WHEN NEW.version > OLD.version AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'workflow.replaced'))
BEGIN
  INSERT INTO event_intake (workspace_id, type, subject, team, data) VALUES (NEW.workspace_id, 'workflow.replaced', 'workflow:' || NEW.id, NEW.team,
    json_object('workflow_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version));
END;

CREATE TRIGGER workflow_event_deleted AFTER DELETE ON workflows
BEGIN
  INSERT INTO event_intake (workspace_id, type, subject, team, data)
    SELECT OLD.workspace_id, 'workflow.deleted', 'workflow:' || OLD.id, OLD.team, json_object('workflow_id', OLD.id, 'slug', OLD.slug, 'version', OLD.version)
    WHERE EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = OLD.workspace_id AND event_type IN ('*', 'workflow.deleted'));
  DELETE FROM event_sequences WHERE subject = 'workflow:' || OLD.id;
END;

CREATE TRIGGER eval_event_finished AFTER UPDATE OF status ON evals
WHEN NEW.status IN ('finished', 'failed') AND OLD.status NOT IN ('finished', 'failed')
  AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'eval.finished'))
BEGIN
  INSERT INTO event_intake (workspace_id, type, subject, team, data) VALUES (NEW.workspace_id, 'eval.finished', 'eval:' || NEW.id, NEW.team,
    json_object('eval_id', NEW.id, 'agent_id', NEW.agent_id, 'status', NEW.status));
END;

CREATE TRIGGER message_event_received AFTER INSERT ON channel_messages
WHEN NEW.direction = 'received' AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'message.received'))
BEGIN
  INSERT INTO event_intake (workspace_id, type, subject, team, data) VALUES (NEW.workspace_id, 'message.received', 'message:' || NEW.id,
    (SELECT team FROM agents WHERE id = NEW.agent_id),
    json_object('message_id', NEW.id, 'agent_id', NEW.agent_id, 'channel', NEW.channel, 'status', NEW.status, 'run_id', NEW.run_id));
END;

-- A subject gone has no more events: its number goes with it.
CREATE TRIGGER run_event_sequence_gone AFTER DELETE ON runs BEGIN DELETE FROM event_sequences WHERE subject = 'run:' || OLD.id; END;
CREATE TRIGGER agent_event_sequence_gone AFTER DELETE ON agents BEGIN DELETE FROM event_sequences WHERE subject = 'agent:' || OLD.id; END;
CREATE TRIGGER eval_event_sequence_gone AFTER DELETE ON evals BEGIN DELETE FROM event_sequences WHERE subject = 'eval:' || OLD.id; END;
CREATE TRIGGER message_event_sequence_gone AFTER DELETE ON channel_messages BEGIN DELETE FROM event_sequences WHERE subject = 'message:' || OLD.id; END;
CREATE TRIGGER endpoint_event_sequence_gone AFTER DELETE ON event_endpoints BEGIN DELETE FROM event_sequences WHERE subject = 'endpoint:' || OLD.id; END;
