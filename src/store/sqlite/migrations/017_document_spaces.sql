-- Where each document lives (issue 43, domain/spaces.ts): its space's team (null: the workspace's
-- own) and, for agents, its folder, kept in step with the current version (document-table.ts
-- `columns`), so that a list says where each item is without reading every document's text.
ALTER TABLE agents ADD COLUMN team TEXT;
ALTER TABLE agents ADD COLUMN folder TEXT;
ALTER TABLE workflows ADD COLUMN team TEXT;
UPDATE agents SET
  team = (SELECT json_extract(t.document, '$.space.team') FROM agent_versions AS v JOIN agent_version_texts AS t ON t.id = v.text_id
          WHERE v.document_id = agents.id AND v.version = agents.version),
  folder = (SELECT json_extract(t.document, '$.folder') FROM agent_versions AS v JOIN agent_version_texts AS t ON t.id = v.text_id
            WHERE v.document_id = agents.id AND v.version = agents.version);
UPDATE workflows SET
  team = (SELECT json_extract(t.document, '$.space.team') FROM workflow_versions AS v JOIN workflow_version_texts AS t ON t.id = v.text_id
          WHERE v.document_id = workflows.id AND v.version = workflows.version);
