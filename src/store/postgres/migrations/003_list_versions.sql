-- A version of each workspace's list of agents and of workflows, so that a replica can hold a list it
-- built and answer it again after one cheap query says nothing changed (postgres/list-versions.ts).
-- Every create, replace and delete of a document adds one to one of its workspace's shards in the
-- write's transaction, and nothing ever subtracts: the sum over the shards changes with every
-- committed write, in whatever order they commit. The shard (by the document's id) spreads the
-- row locks, so writes of different documents of one workspace rarely wait for each other.
CREATE TABLE list_versions (
  workspace_id  text COLLATE "C" NOT NULL,
  tbl           text NOT NULL CHECK (tbl IN ('agents', 'workflows')),
  shard         smallint NOT NULL,
  version       bigint NOT NULL,
  PRIMARY KEY (workspace_id, tbl, shard)
);
