-- The workspaces' eval datasets (issue 48; docs/evals.md): the cases an agent is evaluated
-- on, kept as the other document kinds are, named by their slug (unique in the workspace) and
-- carrying their version in their JSON, as skills do. `name` and `cases` (how many the dataset has)
-- are the list's. Every write keeps its version (as migration 006 has them), written by the
-- dataset's own statement; a deleted dataset's versions go by the cascade. The workspace's list of
-- datasets has a version too (migration 003), so the check on its tables widens.
CREATE TABLE eval_datasets (
  id            text COLLATE "C" PRIMARY KEY,
  workspace_id  text COLLATE "C" NOT NULL,
  slug          text COLLATE "C" NOT NULL,
  name          text NOT NULL,
  cases         integer NOT NULL CHECK (cases >= 0),
  version       integer NOT NULL CHECK (version >= 1),
  stamp_us      bigint NOT NULL,
  created_at    text NOT NULL,
  document      text NOT NULL,
  UNIQUE (workspace_id, slug)
);
CREATE TABLE eval_dataset_versions (
  document_id  text COLLATE "C" NOT NULL REFERENCES eval_datasets (id) ON DELETE CASCADE,
  version      integer NOT NULL CHECK (version >= 1),
  stamp_us     bigint NOT NULL,
  author       text,
  changes      text NOT NULL,
  document     text NOT NULL,
  PRIMARY KEY (document_id, version)
);
ALTER TABLE list_versions DROP CONSTRAINT list_versions_tbl_check;
ALTER TABLE list_versions ADD CONSTRAINT list_versions_tbl_check CHECK (tbl IN ('agents', 'workflows', 'skills', 'eval_datasets'));
