-- Fewer pages per delivery (issue 49, docs/benchmarks.md). A commit writes every page it dirtied to
-- the WAL (4 KiB in two writes, and the page again at the next checkpoint): about 17 µs of CPU a
-- page where it was measured, and most of what an event cost its run's own transaction.
--
-- 1. Each subject's event number (`data.sequence`) lives on the subject's row, not in a table of its
--    own: the change that causes an event has just written that row, so numbering the event dirties
--    no page more, where `event_sequences` was one more B-tree leaf per event. A subject deleted
--    takes its number with it (the `*_sequence_gone` triggers go).
-- 2. The deliveries that wait are indexed by (endpoint, status, due): an endpoint's attempts under
--    way are one range of that index, so the index of those alone (`event_deliveries_busy`) goes,
--    and with it two index writes per attempt.
--
-- The cause triggers now number the event and hand it in with its number in `data`; the intake
-- only fans it out. Every trigger is written again (each names the view or the table dropped here).
DROP TRIGGER run_event_inserted;
DROP TRIGGER run_event_status;
DROP TRIGGER agent_event_created;
DROP TRIGGER agent_event_replaced;
DROP TRIGGER agent_event_status;
DROP TRIGGER workflow_event_created;
DROP TRIGGER workflow_event_replaced;
DROP TRIGGER workflow_event_deleted;
DROP TRIGGER eval_event_finished;
DROP TRIGGER message_event_received;
DROP TRIGGER run_event_sequence_gone;
DROP TRIGGER agent_event_sequence_gone;
DROP TRIGGER eval_event_sequence_gone;
DROP TRIGGER message_event_sequence_gone;
DROP TRIGGER endpoint_event_sequence_gone;
DROP TRIGGER event_intake_insert;
DROP VIEW event_intake;

ALTER TABLE runs ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workflows ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE evals ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE channel_messages ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE event_endpoints ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;

-- The numbers so far, each onto its subject's row, read from the numbers' own table by prefix (so
-- the migration costs what that table holds, not what the subjects' tables do); a number whose
-- subject is gone is dropped with the table. (';' is the character after ':'.)
UPDATE runs SET event_seq = (SELECT seq FROM event_sequences WHERE subject = 'run:' || runs.id)
  WHERE id IN (SELECT substr(subject, 5) FROM event_sequences WHERE subject >= 'run:' AND subject < 'run;');
UPDATE agents SET event_seq = (SELECT seq FROM event_sequences WHERE subject = 'agent:' || agents.id)
  WHERE id IN (SELECT substr(subject, 7) FROM event_sequences WHERE subject >= 'agent:' AND subject < 'agent;');
UPDATE workflows SET event_seq = (SELECT seq FROM event_sequences WHERE subject = 'workflow:' || workflows.id)
  WHERE id IN (SELECT substr(subject, 10) FROM event_sequences WHERE subject >= 'workflow:' AND subject < 'workflow;');
UPDATE evals SET event_seq = (SELECT seq FROM event_sequences WHERE subject = 'eval:' || evals.id)
  WHERE id IN (SELECT substr(subject, 6) FROM event_sequences WHERE subject >= 'eval:' AND subject < 'eval;');
UPDATE channel_messages SET event_seq = (SELECT seq FROM event_sequences WHERE subject = 'message:' || channel_messages.id)
  WHERE id IN (SELECT substr(subject, 9) FROM event_sequences WHERE subject >= 'message:' AND subject < 'message;');
UPDATE event_endpoints SET event_seq = (SELECT seq FROM event_sequences WHERE subject = 'endpoint:' || event_endpoints.id)
  WHERE id IN (SELECT substr(subject, 10) FROM event_sequences WHERE subject >= 'endpoint:' AND subject < 'endpoint;');
DROP TABLE event_sequences;

DROP INDEX event_deliveries_queue;
DROP INDEX event_deliveries_busy;
-- Queries name `status IN ('pending', 'delivering')` as well as the one status they read: SQLite
-- uses a partial index only for a query whose WHERE repeats the index's condition.
CREATE INDEX event_deliveries_waiting ON event_deliveries (endpoint_id, status, next_attempt_ms) WHERE status IN ('pending', 'delivering');

-- Where the cause triggers hand an event in, numbered (`data.sequence`): the intake writes a
-- delivery for every enabled endpoint of the workspace that subscribes to its type and sees its
-- space (team: null is the workspace's own space), each with the event's id, millisecond and body
-- made once (the subquery `ev`). The body is written as json_object would write it, around `data`
-- as the cause trigger's json_object wrote it: parsing `data` again would only cost.
CREATE VIEW event_intake (workspace_id, type, team, data) AS SELECT NULL, NULL, NULL, NULL WHERE 0;

CREATE TRIGGER event_intake_insert INSTEAD OF INSERT ON event_intake
BEGIN
  -- The delivery's id is a UUIDv7 (the event's millisecond, then random bits), so the list's keyset is time-ordered.
  INSERT INTO event_deliveries (id, endpoint_id, workspace_id, event_id, event_type, body, status, next_attempt_ms, created_ms)
    SELECT
      substr(printf('%012x', ev.ms), 1, 8) || '-' || substr(printf('%012x', ev.ms), 9, 4)
        || '-7' || substr(lower(hex(randomblob(2))), 2, 3) || '-' || substr('89ab', 1 + abs(random() % 4), 1)
        || substr(lower(hex(randomblob(2))), 2, 3) || '-' || lower(hex(randomblob(6))),
      e.id, NEW.workspace_id, ev.id, NEW.type, ev.body, 'pending', ev.ms, ev.ms
    FROM (SELECT 'evt_' || printf('%012x', ms) || lower(hex(randomblob(10))) AS id, ms,
            '{"type":' || json_quote(NEW.type) || ',"timestamp":"' || strftime('%Y-%m-%dT%H:%M:%fZ', 'now') || '","data":' || NEW.data || '}' AS body
          FROM (SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER) AS ms)) AS ev
    JOIN event_endpoints AS e ON e.workspace_id = NEW.workspace_id AND e.status = 'enabled'
    WHERE EXISTS (SELECT 1 FROM event_subscriptions AS s WHERE s.workspace_id = NEW.workspace_id AND s.event_type IN (NEW.type, '*') AND s.endpoint_id = e.id)
      AND (NEW.team IS NULL OR e.all_spaces = 1 OR EXISTS (SELECT 1 FROM json_each(e.teams) WHERE value = NEW.team));
END;

-- What causes events. Each trigger fires only when the workspace subscribes to the type (or to '*'),
-- numbers the event on its subject's row (NEW is the row before that write: its number + 1 is this
-- event's) and hands it in. A status change writes a version too: it is `agent.status_changed`, not
-- also `agent.replaced` (a replace never changes the status).
CREATE TRIGGER run_event_inserted AFTER INSERT ON runs
WHEN EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id
  AND event_type IN ('*', CASE NEW.status WHEN 'queued' THEN 'run.queued' WHEN 'running' THEN 'run.started' WHEN 'awaiting_approval' THEN 'run.awaiting_approval' ELSE 'run.finished' END))
BEGIN
  UPDATE runs SET event_seq = NEW.event_seq + 1 WHERE id = NEW.id;
  INSERT INTO event_intake (workspace_id, type, team, data) VALUES (NEW.workspace_id,
    CASE NEW.status WHEN 'queued' THEN 'run.queued' WHEN 'running' THEN 'run.started' WHEN 'awaiting_approval' THEN 'run.awaiting_approval' ELSE 'run.finished' END,
    NEW.team,
    json_object('run_id', NEW.id, 'kind', NEW.kind, CASE NEW.kind WHEN 'agent' THEN 'agent_id' ELSE 'workflow_id' END, NEW.target_id,
      'version', NEW.target_version, 'status', NEW.status, 'source', NEW.source, 'test', json(CASE WHEN NEW.source = 'test' THEN 'true' ELSE 'false' END),
      'sequence', NEW.event_seq + 1));
END;

CREATE TRIGGER run_event_status AFTER UPDATE OF status ON runs
WHEN NEW.status IS NOT OLD.status AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id
  AND event_type IN ('*', CASE NEW.status WHEN 'queued' THEN 'run.queued' WHEN 'running' THEN 'run.started' WHEN 'awaiting_approval' THEN 'run.awaiting_approval' ELSE 'run.finished' END))
BEGIN
  UPDATE runs SET event_seq = NEW.event_seq + 1 WHERE id = NEW.id;
  INSERT INTO event_intake (workspace_id, type, team, data) VALUES (NEW.workspace_id,
    CASE NEW.status WHEN 'queued' THEN 'run.queued' WHEN 'running' THEN 'run.started' WHEN 'awaiting_approval' THEN 'run.awaiting_approval' ELSE 'run.finished' END,
    NEW.team,
    json_object('run_id', NEW.id, 'kind', NEW.kind, CASE NEW.kind WHEN 'agent' THEN 'agent_id' ELSE 'workflow_id' END, NEW.target_id,
      'version', NEW.target_version, 'status', NEW.status, 'source', NEW.source, 'test', json(CASE WHEN NEW.source = 'test' THEN 'true' ELSE 'false' END),
      'sequence', NEW.event_seq + 1));
END;

CREATE TRIGGER agent_event_created AFTER INSERT ON agents
WHEN EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'agent.created'))
BEGIN
  UPDATE agents SET event_seq = NEW.event_seq + 1 WHERE id = NEW.id;
  INSERT INTO event_intake (workspace_id, type, team, data) VALUES (NEW.workspace_id, 'agent.created', NEW.team,
    json_object('agent_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version, 'status', NEW.status, 'sequence', NEW.event_seq + 1));
END;

CREATE TRIGGER agent_event_replaced AFTER UPDATE OF version ON agents
WHEN NEW.version > OLD.version AND NEW.status IS OLD.status
  AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'agent.replaced'))
BEGIN
  UPDATE agents SET event_seq = NEW.event_seq + 1 WHERE id = NEW.id;
  INSERT INTO event_intake (workspace_id, type, team, data) VALUES (NEW.workspace_id, 'agent.replaced', NEW.team,
    json_object('agent_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version, 'status', NEW.status, 'sequence', NEW.event_seq + 1));
END;

CREATE TRIGGER agent_event_status AFTER UPDATE OF status ON agents
WHEN NEW.status IS NOT OLD.status AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'agent.status_changed'))
BEGIN
  UPDATE agents SET event_seq = NEW.event_seq + 1 WHERE id = NEW.id;
  INSERT INTO event_intake (workspace_id, type, team, data) VALUES (NEW.workspace_id, 'agent.status_changed', NEW.team,
    json_object('agent_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version, 'status', NEW.status, 'previous_status', OLD.status, 'sequence', NEW.event_seq + 1));
END;

CREATE TRIGGER workflow_event_created AFTER INSERT ON workflows
WHEN EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'workflow.created'))
BEGIN
  UPDATE workflows SET event_seq = NEW.event_seq + 1 WHERE id = NEW.id;
  INSERT INTO event_intake (workspace_id, type, team, data) VALUES (NEW.workspace_id, 'workflow.created', NEW.team,
    json_object('workflow_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version, 'sequence', NEW.event_seq + 1));
END;

CREATE TRIGGER workflow_event_replaced AFTER UPDATE OF version ON workflows
WHEN NEW.version > OLD.version AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'workflow.replaced'))
BEGIN
  UPDATE workflows SET event_seq = NEW.event_seq + 1 WHERE id = NEW.id;
  INSERT INTO event_intake (workspace_id, type, team, data) VALUES (NEW.workspace_id, 'workflow.replaced', NEW.team,
    json_object('workflow_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version, 'sequence', NEW.event_seq + 1));
END;

-- The row is gone: its number goes with it, this event's is its last + 1.
CREATE TRIGGER workflow_event_deleted AFTER DELETE ON workflows
WHEN EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = OLD.workspace_id AND event_type IN ('*', 'workflow.deleted'))
BEGIN
  INSERT INTO event_intake (workspace_id, type, team, data) VALUES (OLD.workspace_id, 'workflow.deleted', OLD.team,
    json_object('workflow_id', OLD.id, 'slug', OLD.slug, 'version', OLD.version, 'sequence', OLD.event_seq + 1));
END;

CREATE TRIGGER eval_event_finished AFTER UPDATE OF status ON evals
WHEN NEW.status IN ('finished', 'failed') AND OLD.status NOT IN ('finished', 'failed')
  AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'eval.finished'))
BEGIN
  UPDATE evals SET event_seq = NEW.event_seq + 1 WHERE id = NEW.id;
  INSERT INTO event_intake (workspace_id, type, team, data) VALUES (NEW.workspace_id, 'eval.finished', NEW.team,
    json_object('eval_id', NEW.id, 'agent_id', NEW.agent_id, 'status', NEW.status, 'sequence', NEW.event_seq + 1));
END;

CREATE TRIGGER message_event_received AFTER INSERT ON channel_messages
WHEN NEW.direction = 'received' AND EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = NEW.workspace_id AND event_type IN ('*', 'message.received'))
BEGIN
  UPDATE channel_messages SET event_seq = NEW.event_seq + 1 WHERE id = NEW.id;
  INSERT INTO event_intake (workspace_id, type, team, data) VALUES (NEW.workspace_id, 'message.received',
    (SELECT team FROM agents WHERE id = NEW.agent_id),
    json_object('message_id', NEW.id, 'agent_id', NEW.agent_id, 'channel', NEW.channel, 'status', NEW.status, 'run_id', NEW.run_id, 'sequence', NEW.event_seq + 1));
END;
