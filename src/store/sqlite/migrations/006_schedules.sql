-- Schedules that fire: one row per schedule a document declares (an agent's own, each poll trigger,
-- a workflow's), kept in step with the document in the same transaction as its write. The next due
-- time is stored; the scheduler moves it forward with a conditional UPDATE (… WHERE next_due_at = the
-- due time it read), and every due time it decides about is a row of schedule_fires keyed
-- (schedule, due time), written in the same transaction as the run it starts: a due time fires once,
-- whichever process, whatever crashes.
CREATE TABLE schedules (
  id                TEXT PRIMARY KEY,            -- agent:<id> | workflow:<id> | poll:<trigger id>
  kind              TEXT NOT NULL CHECK (kind IN ('agent', 'workflow', 'poll')),
  workspace_id      TEXT NOT NULL,
  owner_id          TEXT NOT NULL,               -- the agent or workflow
  trigger_id        TEXT,                        -- a poll's trigger
  cron              TEXT NOT NULL,
  timezone          TEXT NOT NULL,
  active            INTEGER NOT NULL CHECK (active IN (0, 1)),
  next_due_at       INTEGER,                     -- ms since the epoch; null while inactive
  detector          TEXT,                        -- a poll's tool and args (JSON)
  last_output_hash  TEXT,                        -- a poll's last detector output seen (SHA-256)
  last_fired_at     TEXT,
  last_run_id       TEXT,
  last_error        TEXT,
  failures          INTEGER NOT NULL DEFAULT 0   -- a poll's detector failures in a row (back-off)
) STRICT;
CREATE INDEX schedules_due ON schedules (next_due_at) WHERE next_due_at IS NOT NULL;
CREATE INDEX schedules_by_owner ON schedules (owner_id);

CREATE TABLE schedule_fires (
  schedule_id  TEXT NOT NULL,
  due_at       INTEGER NOT NULL,
  outcome      TEXT NOT NULL CHECK (outcome IN ('fired', 'refused', 'missed', 'overlap', 'failed', 'polling', 'baseline', 'unchanged')),
  run_id       TEXT,
  detail       TEXT,
  recorded_at  TEXT NOT NULL,
  PRIMARY KEY (schedule_id, due_at)
) STRICT;
