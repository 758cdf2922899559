-- Fairness: a workspace may have at most N runs executing at once (RUN_WORKERS_PER_WORKSPACE). The
-- worker's "oldest queued run of a workspace below its cap" reads the queue with each run's
-- workspace, and counts a workspace's running runs, each from a partial index.
DROP INDEX runs_queued;
CREATE INDEX runs_queued ON runs (accepted_at, id, workspace_id) WHERE status = 'queued';
DROP INDEX runs_running;
CREATE INDEX runs_running ON runs (workspace_id, id) WHERE status = 'running';
