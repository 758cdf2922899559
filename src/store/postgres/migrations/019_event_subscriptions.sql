-- Event subscriptions (issue 49, docs/events.md): endpoints that receive the workspace's events,
-- and the outbox their deliveries are sent from. As on SQLite (migration 026), an event and its
-- deliveries are written by triggers inside the statement (so the transaction) of the change that
-- caused it; a change of a workspace that subscribes to nothing costs one index probe. Texts that
-- order or match are COLLATE "C", so lists page as SQLite's do.
CREATE TABLE event_endpoints (
  id                 text COLLATE "C" PRIMARY KEY,
  workspace_id       text COLLATE "C" NOT NULL,
  url                text NOT NULL,
  event_types        text NOT NULL,
  description        text,
  status             text NOT NULL CHECK (status IN ('enabled', 'disabled')),
  disabled_reason    text,
  all_spaces         smallint NOT NULL CHECK (all_spaces IN (0, 1)),
  teams              text NOT NULL,
  secret_sealed      text NOT NULL,
  secret_prefix      text NOT NULL,
  previous_sealed    text,
  previous_until_ms  bigint,
  failing_since_ms   bigint,
  created_at         text NOT NULL,
  stamp_us           bigint NOT NULL
);
CREATE INDEX event_endpoints_by_workspace ON event_endpoints (workspace_id, id);

CREATE TABLE event_subscriptions (
  workspace_id  text COLLATE "C" NOT NULL,
  event_type    text COLLATE "C" NOT NULL,
  endpoint_id   text COLLATE "C" NOT NULL REFERENCES event_endpoints (id) ON DELETE CASCADE,
  PRIMARY KEY (workspace_id, event_type, endpoint_id)
);
CREATE INDEX event_subscriptions_by_endpoint ON event_subscriptions (endpoint_id);

CREATE TABLE events (
  id            text COLLATE "C" PRIMARY KEY,
  workspace_id  text COLLATE "C" NOT NULL,
  type          text NOT NULL,
  body          text NOT NULL,
  created_ms    bigint NOT NULL
);
CREATE INDEX events_by_time ON events (created_ms);

CREATE TABLE event_sequences (
  subject  text COLLATE "C" PRIMARY KEY,
  seq      integer NOT NULL
);

CREATE TABLE event_deliveries (
  id               text COLLATE "C" PRIMARY KEY,
  endpoint_id      text COLLATE "C" NOT NULL REFERENCES event_endpoints (id) ON DELETE CASCADE,
  workspace_id     text COLLATE "C" NOT NULL,
  event_id         text COLLATE "C" NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  event_type       text NOT NULL,
  status           text NOT NULL CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  manual           smallint NOT NULL DEFAULT 0 CHECK (manual IN (0, 1)),
  next_attempt_ms  bigint,
  finished_ms      bigint,
  created_ms       bigint NOT NULL,
  log              text NOT NULL DEFAULT '[]'
);
CREATE INDEX event_deliveries_due ON event_deliveries (next_attempt_ms) WHERE status IN ('pending', 'delivering');
CREATE INDEX event_deliveries_busy ON event_deliveries (endpoint_id, next_attempt_ms) WHERE status = 'delivering';
CREATE INDEX event_deliveries_by_endpoint ON event_deliveries (endpoint_id, id);
CREATE INDEX event_deliveries_by_event ON event_deliveries (event_id);
CREATE INDEX event_deliveries_finished ON event_deliveries (finished_ms) WHERE finished_ms IS NOT NULL;

-- Whether the workspace subscribes to the type: the triggers' gate.
CREATE FUNCTION event_wanted(p_ws text, p_type text) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM event_subscriptions WHERE workspace_id = p_ws AND event_type IN ('*', p_type))
$$;

-- Numbers the event in its subject, writes its body and a delivery (a UUIDv7 id: the list's
-- time-ordered keyset) for every enabled endpoint of the workspace that subscribes to its type and
-- sees its space (team null: the workspace's own space).
CREATE FUNCTION record_event(p_ws text, p_type text, p_subject text, p_team text, p_data jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_seq integer;
  v_event text := 'evt_' || replace(gen_random_uuid()::text, '-', '');
  v_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
BEGIN
  INSERT INTO event_sequences AS s (subject, seq) VALUES (p_subject, 1)
    ON CONFLICT ON CONSTRAINT event_sequences_pkey DO UPDATE SET seq = s.seq + 1 RETURNING s.seq INTO v_seq;
  INSERT INTO events (id, workspace_id, type, body, created_ms) VALUES (v_event, p_ws, p_type,
    json_build_object('type', p_type, 'timestamp', to_char(to_timestamp(v_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'data', p_data || jsonb_build_object('sequence', v_seq))::text, v_ms);
  INSERT INTO event_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status, next_attempt_ms, created_ms)
    SELECT (lpad(to_hex(v_ms), 12, '0') || '7' || substr(md5(random()::text || e.id), 1, 3)
        || substr('89ab', 1 + floor(random() * 4)::int, 1) || substr(md5(random()::text || v_event), 1, 15))::uuid::text,
      e.id, p_ws, v_event, p_type, 'pending', v_ms, v_ms
    FROM event_endpoints AS e
    WHERE e.workspace_id = p_ws AND e.status = 'enabled'
      AND EXISTS (SELECT 1 FROM event_subscriptions AS x WHERE x.workspace_id = p_ws AND x.event_type IN (p_type, '*') AND x.endpoint_id = e.id)
      AND (p_team IS NULL OR e.all_spaces = 1 OR e.teams::jsonb ? p_team);
END $$;

CREATE FUNCTION run_event_type(p_status text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_status WHEN 'queued' THEN 'run.queued' WHEN 'running' THEN 'run.started' WHEN 'awaiting_approval' THEN 'run.awaiting_approval' ELSE 'run.finished' END
$$;

CREATE FUNCTION run_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status THEN RETURN NULL; END IF;
  IF NOT event_wanted(NEW.workspace_id, run_event_type(NEW.status)) THEN RETURN NULL; END IF;
  PERFORM record_event(NEW.workspace_id, run_event_type(NEW.status), 'run:' || NEW.id, NEW.team,
    jsonb_build_object('run_id', NEW.id, 'kind', NEW.kind, CASE NEW.kind WHEN 'agent' THEN 'agent_id' ELSE 'workflow_id' END, NEW.target_id,
      'version', NEW.target_version, 'status', NEW.status, 'source', NEW.source, 'test', NEW.source = 'test'));
  RETURN NULL;
END $$;
CREATE TRIGGER run_event_inserted AFTER INSERT ON runs FOR EACH ROW EXECUTE FUNCTION run_event();
CREATE TRIGGER run_event_status AFTER UPDATE OF status ON runs FOR EACH ROW EXECUTE FUNCTION run_event();

CREATE FUNCTION agent_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF event_wanted(NEW.workspace_id, 'agent.created') THEN
      PERFORM record_event(NEW.workspace_id, 'agent.created', 'agent:' || NEW.id, NEW.team,
        jsonb_build_object('agent_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version, 'status', NEW.status));
    END IF;
    RETURN NULL;
  END IF;
  -- A status change writes a version too: it is agent.status_changed, not also agent.replaced (a replace never changes the status).
  IF NEW.version > OLD.version AND NEW.status IS NOT DISTINCT FROM OLD.status AND event_wanted(NEW.workspace_id, 'agent.replaced') THEN
    PERFORM record_event(NEW.workspace_id, 'agent.replaced', 'agent:' || NEW.id, NEW.team,
      jsonb_build_object('agent_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version, 'status', NEW.status));
  END IF;
  IF NEW.status IS DISTINCT FROM OLD.status AND event_wanted(NEW.workspace_id, 'agent.status_changed') THEN
    PERFORM record_event(NEW.workspace_id, 'agent.status_changed', 'agent:' || NEW.id, NEW.team,
      jsonb_build_object('agent_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version, 'status', NEW.status, 'previous_status', OLD.status));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER agent_event_created AFTER INSERT ON agents FOR EACH ROW EXECUTE FUNCTION agent_event();
CREATE TRIGGER agent_event_changed AFTER UPDATE OF version, status ON agents FOR EACH ROW EXECUTE FUNCTION agent_event();

CREATE FUNCTION workflow_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF event_wanted(NEW.workspace_id, 'workflow.created') THEN
      PERFORM record_event(NEW.workspace_id, 'workflow.created', 'workflow:' || NEW.id, NEW.team,
        jsonb_build_object('workflow_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version));
    END IF;
  ELSIF TG_OP = 'DELETE' THEN
    IF event_wanted(OLD.workspace_id, 'workflow.deleted') THEN
      PERFORM record_event(OLD.workspace_id, 'workflow.deleted', 'workflow:' || OLD.id, OLD.team,
        jsonb_build_object('workflow_id', OLD.id, 'slug', OLD.slug, 'version', OLD.version));
    END IF;
    DELETE FROM event_sequences WHERE subject = 'workflow:' || OLD.id;
  ELSIF NEW.version > OLD.version AND event_wanted(NEW.workspace_id, 'workflow.replaced') THEN
    PERFORM record_event(NEW.workspace_id, 'workflow.replaced', 'workflow:' || NEW.id, NEW.team,
      jsonb_build_object('workflow_id', NEW.id, 'slug', NEW.slug, 'version', NEW.version));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER workflow_event_created AFTER INSERT ON workflows FOR EACH ROW EXECUTE FUNCTION workflow_event();
CREATE TRIGGER workflow_event_replaced AFTER UPDATE OF version ON workflows FOR EACH ROW EXECUTE FUNCTION workflow_event();
CREATE TRIGGER workflow_event_deleted AFTER DELETE ON workflows FOR EACH ROW EXECUTE FUNCTION workflow_event();

CREATE FUNCTION eval_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status IN ('finished', 'failed') AND OLD.status NOT IN ('finished', 'failed') AND event_wanted(NEW.workspace_id, 'eval.finished') THEN
    PERFORM record_event(NEW.workspace_id, 'eval.finished', 'eval:' || NEW.id, NEW.team,
      jsonb_build_object('eval_id', NEW.id, 'agent_id', NEW.agent_id, 'status', NEW.status));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER eval_event_finished AFTER UPDATE OF status ON evals FOR EACH ROW EXECUTE FUNCTION eval_event();

CREATE FUNCTION message_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.direction = 'received' AND event_wanted(NEW.workspace_id, 'message.received') THEN
    PERFORM record_event(NEW.workspace_id, 'message.received', 'message:' || NEW.id, (SELECT team FROM agents WHERE id = NEW.agent_id),
      jsonb_build_object('message_id', NEW.id, 'agent_id', NEW.agent_id, 'channel', NEW.channel, 'status', NEW.status, 'run_id', NEW.run_id));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER message_event_received AFTER INSERT ON channel_messages FOR EACH ROW EXECUTE FUNCTION message_event();

-- A subject gone has no more events: its number goes with it.
CREATE FUNCTION event_sequence_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM event_sequences WHERE subject = TG_ARGV[0] || ':' || OLD.id;
  RETURN NULL;
END $$;
CREATE TRIGGER run_event_sequence_gone AFTER DELETE ON runs FOR EACH ROW EXECUTE FUNCTION event_sequence_gone('run');
CREATE TRIGGER agent_event_sequence_gone AFTER DELETE ON agents FOR EACH ROW EXECUTE FUNCTION event_sequence_gone('agent');
CREATE TRIGGER eval_event_sequence_gone AFTER DELETE ON evals FOR EACH ROW EXECUTE FUNCTION event_sequence_gone('eval');
CREATE TRIGGER message_event_sequence_gone AFTER DELETE ON channel_messages FOR EACH ROW EXECUTE FUNCTION event_sequence_gone('message');
CREATE TRIGGER endpoint_event_sequence_gone AFTER DELETE ON event_endpoints FOR EACH ROW EXECUTE FUNCTION event_sequence_gone('endpoint');
