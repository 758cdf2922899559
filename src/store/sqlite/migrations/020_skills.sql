-- The workspaces' skills (issue 45; docs/skills.md): documents of the Agent Skills format kept as the
-- other kinds are (document-table.ts). The skill's name is its identity, kept in the `slug` column
-- that every document table has (unique in the workspace). `description` is the list's. Every write
-- keeps its version, its text in a table of its own (as migration 016 has them), deleted with its
-- version by the trigger; a deleted skill's versions go by the foreign key's cascade.
CREATE TABLE skills (
  id            TEXT PRIMARY KEY,
  workspace_id  TEXT NOT NULL,
  slug          TEXT NOT NULL,
  description   TEXT NOT NULL,
  version       INTEGER NOT NULL CHECK (version >= 1),
  stamp_us      INTEGER NOT NULL,
  created_at    TEXT NOT NULL,
  UNIQUE (workspace_id, slug)
) STRICT;

CREATE TABLE skill_version_texts (id INTEGER PRIMARY KEY, document TEXT NOT NULL);
CREATE TABLE skill_versions (
  document_id  TEXT NOT NULL REFERENCES skills (id) ON DELETE CASCADE,
  version      INTEGER NOT NULL CHECK (version >= 1),
  stamp_us     INTEGER NOT NULL,
  author       TEXT,
  changes      TEXT NOT NULL,
  text_id      INTEGER NOT NULL,
  PRIMARY KEY (document_id, version)
) WITHOUT ROWID;
CREATE TRIGGER skill_version_text_deleted AFTER DELETE ON skill_versions
BEGIN
  DELETE FROM skill_version_texts WHERE id = OLD.text_id;
END;
