-- The outbox in one table, as on SQLite (migration 027; issue 49, docs/benchmarks.md): each
-- delivery carries its event's body and event ids are in time order (`evt_`, the event's
-- millisecond in 12 hex digits, 20 random ones), so a run's last write adds one row at the
-- right-hand end of each index instead of two rows and a random key; and what waits is indexed by
-- endpoint (below).
ALTER TABLE event_deliveries ADD COLUMN body text;
UPDATE event_deliveries AS d SET body = e.body FROM events AS e WHERE e.id = d.event_id;
ALTER TABLE event_deliveries ALTER COLUMN body SET NOT NULL;
ALTER TABLE event_deliveries DROP CONSTRAINT event_deliveries_event_id_fkey;
DROP INDEX event_deliveries_by_event;
DROP TABLE events;
-- What waits, by endpoint then due time: a claim visits the endpoints with deliveries waiting and
-- reads each one's oldest due ones (one ordered range), so its cost does not grow with a backlog.
DROP INDEX event_deliveries_due;
CREATE INDEX event_deliveries_queue ON event_deliveries (endpoint_id, next_attempt_ms) WHERE status IN ('pending', 'delivering');

CREATE OR REPLACE FUNCTION record_event(p_ws text, p_type text, p_subject text, p_team text, p_data jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_seq integer;
  v_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  v_event text := 'evt_' || lpad(to_hex(v_ms), 12, '0') || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20);
  v_body text;
BEGIN
  INSERT INTO event_sequences AS s (subject, seq) VALUES (p_subject, 1)
    ON CONFLICT ON CONSTRAINT event_sequences_pkey DO UPDATE SET seq = s.seq + 1 RETURNING s.seq INTO v_seq;
  v_body := json_build_object('type', p_type, 'timestamp', to_char(to_timestamp(v_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'data', p_data || jsonb_build_object('sequence', v_seq))::text;
  INSERT INTO event_deliveries (id, endpoint_id, workspace_id, event_id, event_type, body, status, next_attempt_ms, created_ms)
    SELECT (lpad(to_hex(v_ms), 12, '0') || '7' || substr(md5(random()::text || e.id), 1, 3)
        || substr('89ab', 1 + floor(random() * 4)::int, 1) || substr(md5(random()::text || v_event), 1, 15))::uuid::text,
      e.id, p_ws, v_event, p_type, v_body, 'pending', v_ms, v_ms
    FROM event_endpoints AS e
    WHERE e.workspace_id = p_ws AND e.status = 'enabled'
      AND EXISTS (SELECT 1 FROM event_subscriptions AS x WHERE x.workspace_id = p_ws AND x.event_type IN (p_type, '*') AND x.endpoint_id = e.id)
      AND (p_team IS NULL OR e.all_spaces = 1 OR e.teams::jsonb ? p_team);
END $$;
