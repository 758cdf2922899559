-- Every write of an agent or a workflow keeps its version (as sqlite/migrations/013): the document
-- as that write stored it, its stamp, its author (the token's sub) and what it changed (a JSON
-- array of sentences). Written by the document's own statement (document-writes.ts); a document's
-- versions go with it by the foreign key's cascade. runs_by_target finds the versions runs name,
-- which pruning keeps.
CREATE TABLE agent_versions (
  document_id  text COLLATE "C" NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  version      integer NOT NULL CHECK (version >= 1),
  stamp_us     bigint NOT NULL,
  author       text,
  changes      text NOT NULL,
  document     text NOT NULL,
  PRIMARY KEY (document_id, version)
);
CREATE TABLE workflow_versions (
  document_id  text COLLATE "C" NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
  version      integer NOT NULL CHECK (version >= 1),
  stamp_us     bigint NOT NULL,
  author       text,
  changes      text NOT NULL,
  document     text NOT NULL,
  PRIMARY KEY (document_id, version)
);
INSERT INTO agent_versions (document_id, version, stamp_us, author, changes, document) SELECT id, version, stamp_us, NULL, '[]', document FROM agents;
INSERT INTO workflow_versions (document_id, version, stamp_us, author, changes, document) SELECT id, version, stamp_us, NULL, '[]', document FROM workflows;
CREATE INDEX runs_by_target ON runs (target_id, target_version);
