-- The workspaces' skills (issue 45; docs/skills.md), kept as the other document kinds are: the
-- skill's name is its identity, in the `slug` column every document table has (unique in the
-- workspace); `description` is the list's. Every write keeps its version (as migration 006 has
-- them), written by the skill's own statement; a deleted skill's versions go by the cascade. The
-- workspace's list of skills has a version too (migration 003), so the check on its tables widens.
CREATE TABLE skills (
  id            text COLLATE "C" PRIMARY KEY,
  workspace_id  text COLLATE "C" NOT NULL,
  slug          text COLLATE "C" NOT NULL,
  description   text NOT NULL,
  version       integer NOT NULL CHECK (version >= 1),
  stamp_us      bigint NOT NULL,
  created_at    text NOT NULL,
  document      text NOT NULL,
  UNIQUE (workspace_id, slug)
);
CREATE TABLE skill_versions (
  document_id  text COLLATE "C" NOT NULL REFERENCES skills (id) ON DELETE CASCADE,
  version      integer NOT NULL CHECK (version >= 1),
  stamp_us     bigint NOT NULL,
  author       text,
  changes      text NOT NULL,
  document     text NOT NULL,
  PRIMARY KEY (document_id, version)
);
ALTER TABLE list_versions DROP CONSTRAINT list_versions_tbl_check;
ALTER TABLE list_versions ADD CONSTRAINT list_versions_tbl_check CHECK (tbl IN ('agents', 'workflows', 'skills'));
