-- The outbox in one table (issue 49, docs/benchmarks.md): each delivery carries its event's body,
-- event ids are in time order, and what waits is indexed by endpoint (below). An event was a row of `events` (three B-trees: the table, its
-- key, its time) and a delivery row keyed to it (one more index); its random id put each event in a
-- random leaf of two of them. Every page a run's last write dirties is written to the WAL and
-- checkpointed again: the event with its delivery cost that write 235 µs of CPU, 140 µs now. A body
-- is a few hundred bytes; an event that goes to several endpoints has it in each delivery.
--
-- SQLite cannot drop a foreign key, so the table is rebuilt (its trigger goes first: it names it).
DROP TRIGGER event_intake_insert;

CREATE TABLE event_deliveries_new (
  id               TEXT PRIMARY KEY,           -- a UUIDv7: the list's newest-first keyset
  endpoint_id      TEXT NOT NULL REFERENCES event_endpoints (id) ON DELETE CASCADE,
  workspace_id     TEXT NOT NULL,
  event_id         TEXT NOT NULL,              -- evt_<12 hex digits of its millisecond><20 random>: the webhook-id
  event_type       TEXT NOT NULL,
  body             TEXT NOT NULL,              -- what each attempt sends, as signed: written once, never changed
  status           TEXT NOT NULL CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  manual           INTEGER NOT NULL DEFAULT 0 CHECK (manual IN (0, 1)),
  next_attempt_ms  INTEGER,
  finished_ms      INTEGER,
  created_ms       INTEGER NOT NULL,
  log              TEXT NOT NULL DEFAULT '[]'
) STRICT;
INSERT INTO event_deliveries_new (id, endpoint_id, workspace_id, event_id, event_type, body, status, attempts, manual, next_attempt_ms, finished_ms, created_ms, log)
  SELECT d.id, d.endpoint_id, d.workspace_id, d.event_id, d.event_type, e.body, d.status, d.attempts, d.manual, d.next_attempt_ms, d.finished_ms, d.created_ms, d.log
  FROM event_deliveries AS d JOIN events AS e ON e.id = d.event_id;
DROP TABLE event_deliveries;
DROP TABLE events;
ALTER TABLE event_deliveries_new RENAME TO event_deliveries;
-- What waits, by endpoint then due time: a claim visits the endpoints with deliveries waiting and
-- reads each one's oldest due ones (one ordered range), so its cost does not grow with a backlog.
-- `status` makes it cover the claim's read (SQLite reads a row to test the partial condition).
CREATE INDEX event_deliveries_queue ON event_deliveries (endpoint_id, next_attempt_ms, status) WHERE status IN ('pending', 'delivering');
CREATE INDEX event_deliveries_busy ON event_deliveries (endpoint_id, next_attempt_ms) WHERE status = 'delivering';
CREATE INDEX event_deliveries_by_endpoint ON event_deliveries (endpoint_id, id);
CREATE INDEX event_deliveries_finished ON event_deliveries (finished_ms) WHERE finished_ms IS NOT NULL;

-- As in migration 026, with the event's id, millisecond and body made once (the subquery `ev`) and
-- written into each delivery.
CREATE TRIGGER event_intake_insert INSTEAD OF INSERT ON event_intake
BEGIN
  INSERT INTO event_sequences (subject, seq) VALUES (NEW.subject, 1) ON CONFLICT (subject) DO UPDATE SET seq = seq + 1;
  INSERT INTO event_deliveries (id, endpoint_id, workspace_id, event_id, event_type, body, status, next_attempt_ms, created_ms)
    SELECT
      substr(printf('%012x', ev.ms), 1, 8) || '-' || substr(printf('%012x', ev.ms), 9, 4)
        || '-7' || substr(lower(hex(randomblob(2))), 2, 3) || '-' || substr('89ab', 1 + abs(random() % 4), 1)
        || substr(lower(hex(randomblob(2))), 2, 3) || '-' || lower(hex(randomblob(6))),
      e.id, NEW.workspace_id, ev.id, NEW.type, ev.body, 'pending', ev.ms, ev.ms
    FROM (SELECT 'evt_' || printf('%012x', ms) || lower(hex(randomblob(10))) AS id, ms,
            json_object('type', NEW.type, 'timestamp', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
              'data', json_set(NEW.data, '$.sequence', (SELECT seq FROM event_sequences WHERE subject = NEW.subject))) AS body
          FROM (SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER) AS ms)) AS ev
    JOIN event_endpoints AS e ON e.workspace_id = NEW.workspace_id AND e.status = 'enabled'
    WHERE EXISTS (SELECT 1 FROM event_subscriptions AS s WHERE s.workspace_id = NEW.workspace_id AND s.event_type IN (NEW.type, '*') AND s.endpoint_id = e.id)
      AND (NEW.team IS NULL OR e.all_spaces = 1 OR EXISTS (SELECT 1 FROM json_each(e.teams) WHERE value = NEW.team));
END;
