-- The workspaces' eval datasets (issue 48; docs/evals.md): the cases an agent is evaluated
-- on, kept as the other document kinds are (document-table.ts), named by their slug (unique in the
-- workspace) and carrying their version in their JSON, as skills do. `name` and `cases` (how many
-- the dataset has) are the list's. Every write keeps its version, its text in a table of its own
-- (as migration 016 has them), deleted with its version by the trigger; a deleted dataset's
-- versions go by the foreign key's cascade.
CREATE TABLE eval_datasets (
  id            TEXT PRIMARY KEY,
  workspace_id  TEXT NOT NULL,
  slug          TEXT NOT NULL,
  name          TEXT NOT NULL,
  cases         INTEGER NOT NULL CHECK (cases >= 0),
  version       INTEGER NOT NULL CHECK (version >= 1),
  stamp_us      INTEGER NOT NULL,
  created_at    TEXT NOT NULL,
  UNIQUE (workspace_id, slug)
) STRICT;

CREATE TABLE eval_dataset_version_texts (id INTEGER PRIMARY KEY, document TEXT NOT NULL);
CREATE TABLE eval_dataset_versions (
  document_id  TEXT NOT NULL REFERENCES eval_datasets (id) ON DELETE CASCADE,
  version      INTEGER NOT NULL CHECK (version >= 1),
  stamp_us     INTEGER NOT NULL,
  author       TEXT,
  changes      TEXT NOT NULL,
  text_id      INTEGER NOT NULL,
  PRIMARY KEY (document_id, version)
) WITHOUT ROWID;
CREATE TRIGGER eval_dataset_version_text_deleted AFTER DELETE ON eval_dataset_versions
BEGIN
  DELETE FROM eval_dataset_version_texts WHERE id = OLD.text_id;
END;
