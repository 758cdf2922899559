-- Every write of an agent or a workflow keeps its version: the document as that write stored it,
-- its stamp, its author (the token's sub) and what it changed (a JSON array of sentences). A
-- document's versions go with it (a deleted workflow's). Versions are pruned to the newest
-- VERSIONS_KEPT of each document, except those a run names: runs_by_target finds those.
-- The document text is kept once, in its version: the document's own row no longer holds it (a
-- write then stores its text once, as before versions), and a read takes it from the version the
-- row names.
CREATE TABLE agent_versions (
  document_id  TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  version      INTEGER NOT NULL CHECK (version >= 1),
  stamp_us     INTEGER NOT NULL,
  author       TEXT,
  changes      TEXT NOT NULL,
  document     TEXT NOT NULL,
  PRIMARY KEY (document_id, version)
);
CREATE TABLE workflow_versions (
  document_id  TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
  version      INTEGER NOT NULL CHECK (version >= 1),
  stamp_us     INTEGER NOT NULL,
  author       TEXT,
  changes      TEXT NOT NULL,
  document     TEXT NOT NULL,
  PRIMARY KEY (document_id, version)
);
-- The documents stored before versions began keep their current version, with no author.
INSERT INTO agent_versions (document_id, version, stamp_us, author, changes, document) SELECT id, version, stamp_us, NULL, '[]', document FROM agents;
INSERT INTO workflow_versions (document_id, version, stamp_us, author, changes, document) SELECT id, version, stamp_us, NULL, '[]', document FROM workflows;
ALTER TABLE agents DROP COLUMN document;
ALTER TABLE workflows DROP COLUMN document;
CREATE INDEX runs_by_target ON runs (target_id, target_version);
