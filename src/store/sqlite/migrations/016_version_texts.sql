-- A version's text in a table of its own, and its other columns in a WITHOUT ROWID table ordered
-- by (document, version): a page of a version list reads adjacent small rows, where it read one
-- row of some 8 KiB (and its own pages) per version (issue 26, docs/benchmarks.md). A document
-- read takes its text through the version its row names. No foreign key runs from a version to its
-- text (deleting a text would then scan the versions for it): the versions' trigger deletes the
-- text of every version deleted, by a prune or by its document's deletion (the cascade).
CREATE TABLE agent_version_texts (id INTEGER PRIMARY KEY, document TEXT NOT NULL);
CREATE TABLE agent_versions_kept (
  document_id  TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  version      INTEGER NOT NULL CHECK (version >= 1),
  stamp_us     INTEGER NOT NULL,
  author       TEXT,
  changes      TEXT NOT NULL,
  text_id      INTEGER NOT NULL,
  PRIMARY KEY (document_id, version)
) WITHOUT ROWID;
INSERT INTO agent_version_texts (id, document) SELECT rowid, document FROM agent_versions;
INSERT INTO agent_versions_kept (document_id, version, stamp_us, author, changes, text_id)
  SELECT document_id, version, stamp_us, author, changes, rowid FROM agent_versions;
DROP TABLE agent_versions;
ALTER TABLE agent_versions_kept RENAME TO agent_versions;
CREATE TRIGGER agent_version_text_deleted AFTER DELETE ON agent_versions
BEGIN
  DELETE FROM agent_version_texts WHERE id = OLD.text_id;
END;

CREATE TABLE workflow_version_texts (id INTEGER PRIMARY KEY, document TEXT NOT NULL);
CREATE TABLE workflow_versions_kept (
  document_id  TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
  version      INTEGER NOT NULL CHECK (version >= 1),
  stamp_us     INTEGER NOT NULL,
  author       TEXT,
  changes      TEXT NOT NULL,
  text_id      INTEGER NOT NULL,
  PRIMARY KEY (document_id, version)
) WITHOUT ROWID;
INSERT INTO workflow_version_texts (id, document) SELECT rowid, document FROM workflow_versions;
INSERT INTO workflow_versions_kept (document_id, version, stamp_us, author, changes, text_id)
  SELECT document_id, version, stamp_us, author, changes, rowid FROM workflow_versions;
DROP TABLE workflow_versions;
ALTER TABLE workflow_versions_kept RENAME TO workflow_versions;
CREATE TRIGGER workflow_version_text_deleted AFTER DELETE ON workflow_versions
BEGIN
  DELETE FROM workflow_version_texts WHERE id = OLD.text_id;
END;
