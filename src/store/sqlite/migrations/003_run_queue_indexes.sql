-- The worker's "oldest queued run" and the start's "runs left running" scanned the whole runs table:
-- SQLite uses a partial index only when the query's WHERE implies the index's, and it cannot prove
-- that `status = 'queued'` implies `status IN ('queued', 'running')`. One partial index per status,
-- in the order the worker claims runs, makes both lookups independent of how many runs exist.
DROP INDEX runs_pending;
CREATE INDEX runs_queued ON runs (accepted_at, id) WHERE status = 'queued';
CREATE INDEX runs_running ON runs (id) WHERE status = 'running';
