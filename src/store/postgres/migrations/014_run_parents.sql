-- Workflows as an agent's tools (issue 45): a workflow run an agent's tool call started names the
-- run that called it, so cancelling that run reaches it (runs_by_parent), and who may read it: a
-- test's children only by the test's starter (`visible_to`), as the test itself.
ALTER TABLE runs ADD COLUMN parent_run_id text;
ALTER TABLE runs ADD COLUMN visible_to text;
CREATE INDEX runs_by_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;
