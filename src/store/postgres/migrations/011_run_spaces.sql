-- The space of the document a run runs (issue 43, domain/spaces.ts), kept on the run when it is
-- accepted: who may read the run and which lists show it follow it, even after the document moves
-- or is deleted. Existing runs take it from the document they ran (their snapshot), read by
-- pattern: jsonb cannot read every snapshot (U+0000 escaped in a name), and a snapshot is
-- JSON.stringify's text, whose top-level space comes before any member that could nest another.
ALTER TABLE runs ADD COLUMN team text;
UPDATE runs SET team = substring(snapshot from '"space":\{"team":"([a-z0-9-]+)"\}') WHERE snapshot IS NOT NULL;
