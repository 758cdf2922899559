-- Run lists: a workspace's runs of one kind, newest first, paged by a keyset on the time-ordered id.
CREATE INDEX runs_by_workspace ON runs (workspace_id, kind, id);
