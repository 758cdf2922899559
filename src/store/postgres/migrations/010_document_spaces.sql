-- Where each document lives (issue 43, domain/spaces.ts): its space's team (null: the workspace's
-- own) and, for agents, its folder, kept in step with the document by every write (the document
-- tables' `columns`), so that a list says where each item is without reading every document.
ALTER TABLE agents ADD COLUMN team text, ADD COLUMN folder text;
ALTER TABLE workflows ADD COLUMN team text;

-- Filled from the stored text. A document that jsonb cannot read (U+0000 or a lone surrogate,
-- written before requests refused them) is read by pattern: the text is JSON.stringify's, with no
-- whitespace, and the top-level space comes before any member that could nest another.
DO $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT id, document FROM agents LOOP
    BEGIN
      UPDATE agents SET team = r.document::jsonb #>> '{space,team}', folder = r.document::jsonb ->> 'folder' WHERE id = r.id;
    EXCEPTION WHEN others THEN
      UPDATE agents SET team = substring(r.document from '"space":\{"team":"([a-z0-9-]+)"\}'),
        folder = substring(r.document from '"folder":"([^"\\]*)"') WHERE id = r.id;
    END;
  END LOOP;
  FOR r IN SELECT id, document FROM workflows LOOP
    BEGIN
      UPDATE workflows SET team = r.document::jsonb #>> '{space,team}' WHERE id = r.id;
    EXCEPTION WHEN others THEN
      UPDATE workflows SET team = substring(r.document from '"space":\{"team":"([a-z0-9-]+)"\}') WHERE id = r.id;
    END;
  END LOOP;
END $$;
