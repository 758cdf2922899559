-- The run lists' index, which the planner cannot pass over for the primary key. A list is a
-- workspace's runs of one kind, newest id first (shared/run-lists.ts). With runs_by_workspace
-- (workspace_id, kind, id), the primary key (id) could give that order too, and PostgreSQL chose it
-- whenever its statistics said the workspace held most runs: it then walked back through every newer
-- run of every other workspace to find the page (2 ms of database CPU for a first page behind 20,000
-- newer runs of another workspace, against 0.1 ms). Its key here is the id under the "POSIX"
-- collation, which orders byte-wise exactly as "C" does but is another collation to the planner, so
-- only this index gives the list's order, and the lists order and compare by it (postgres/run-lists.ts).
-- Building it locks the runs table against writes for as long as it takes (seconds per million runs).
CREATE INDEX runs_listed ON runs (workspace_id, kind, (id COLLATE "POSIX"));
DROP INDEX runs_by_workspace;
