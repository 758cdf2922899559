-- A delivery is found by its endpoint and id (docs/benchmarks.md, issue 49): every read of one
-- names the endpoint (the API's paths do, and the sender's record carries it), and the list of an
-- endpoint's deliveries is that key's range. So the key (endpoint_id, id) is the table's one unique
-- index, and the id's own index goes: one B-tree fewer for the write that carries each event, a
-- page fewer in the WAL of the transaction that caused it.
--
-- SQLite cannot drop a primary key, so the table is rebuilt. The intake trigger (migration 027)
-- writes to the table by its name, which the new table takes: with legacy_alter_table, the rename
-- leaves the trigger's text as it is instead of checking it against a table just dropped.
PRAGMA legacy_alter_table = ON;

CREATE TABLE event_deliveries_new (
  id               TEXT NOT NULL,              -- a UUIDv7: the list's newest-first keyset
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
  log              TEXT NOT NULL DEFAULT '[]',
  UNIQUE (endpoint_id, id)
) STRICT;
INSERT INTO event_deliveries_new (id, endpoint_id, workspace_id, event_id, event_type, body, status, attempts, manual, next_attempt_ms, finished_ms, created_ms, log)
  SELECT id, endpoint_id, workspace_id, event_id, event_type, body, status, attempts, manual, next_attempt_ms, finished_ms, created_ms, log
  FROM event_deliveries ORDER BY rowid;
DROP TABLE event_deliveries;
ALTER TABLE event_deliveries_new RENAME TO event_deliveries;
PRAGMA legacy_alter_table = OFF;
CREATE INDEX event_deliveries_queue ON event_deliveries (endpoint_id, next_attempt_ms, status) WHERE status IN ('pending', 'delivering');
CREATE INDEX event_deliveries_busy ON event_deliveries (endpoint_id, next_attempt_ms) WHERE status = 'delivering';
CREATE INDEX event_deliveries_finished ON event_deliveries (finished_ms) WHERE finished_ms IS NOT NULL;
