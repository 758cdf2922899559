-- Evals (issue 48; docs/evals.md): an agent run over a dataset's cases and graded, driven by any
-- replica under a lease. `item` is the eval's list item as of its last write (JSON), `plan` what
-- its driver follows (opaque here), `held` the credits it still holds of the reservation its
-- create took from the workspace's balance (given back as it goes and at its end). `status` is the
-- truth of where it stands: a read sets the item's status from it. Every write that moves an eval on
-- is conditional on `lease_owner`; `lease_until` (epoch ms) is when another replica may claim it.
-- Texts that order or match are COLLATE "C", so the list pages as SQLite's does.
CREATE TABLE evals (
  id            text COLLATE "C" PRIMARY KEY,
  workspace_id  text COLLATE "C" NOT NULL,
  agent_id      text COLLATE "C" NOT NULL,
  team          text COLLATE "C",
  status        text NOT NULL CHECK (status IN ('queued', 'running', 'finished', 'failed')),
  created_at    text COLLATE "C" NOT NULL,
  finished_at   text COLLATE "C",
  item          text NOT NULL,
  plan          text NOT NULL,
  held          bigint NOT NULL CHECK (held >= 0),
  lease_owner   text COLLATE "C",
  lease_until   bigint
);
-- The agent's evals, newest first (the list's keyset).
CREATE INDEX evals_by_agent ON evals (workspace_id, agent_id, created_at DESC, id DESC);
-- The drivers' claims: the evals not ended, by when their lease runs out.
CREATE INDEX evals_due ON evals (lease_until) WHERE status IN ('queued', 'running');
-- Retention: the ended evals by when they ended.
CREATE INDEX evals_by_finish ON evals (finished_at) WHERE finished_at IS NOT NULL;

-- One row per case and repeat (`ordinal`: its place in the eval's order). `result` is the row's
-- EvalCaseResult as last written (JSON); `run_id` is its run, its own column so that a run is
-- recorded once per row by a conditional write (a read sets the result's run_id from it).
CREATE TABLE eval_runs (
  eval_id  text COLLATE "C" NOT NULL REFERENCES evals (id) ON DELETE CASCADE,
  ordinal  integer NOT NULL CHECK (ordinal >= 0),
  run_id   text COLLATE "C",
  result   text NOT NULL,
  PRIMARY KEY (eval_id, ordinal)
);

-- The eval's event stream (GET /api/build/evals/{id}/events), each event appended in the write that
-- made it so, numbered from 1 per eval; at most two per case run and two more per eval.
CREATE TABLE eval_events (
  eval_id  text COLLATE "C" NOT NULL REFERENCES evals (id) ON DELETE CASCADE,
  seq      integer NOT NULL CHECK (seq >= 1),
  type     text NOT NULL,
  at       text NOT NULL,
  data     text NOT NULL,
  PRIMARY KEY (eval_id, seq)
);
