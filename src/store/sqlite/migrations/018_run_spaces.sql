-- The space of the document a run runs (issue 43, domain/spaces.ts), kept on the run when it is
-- accepted: who may read the run and which lists show it follow it, even after the document moves
-- or is deleted. Existing runs take it from the document they ran (their snapshot).
ALTER TABLE runs ADD COLUMN team TEXT;
UPDATE runs SET team = json_extract(snapshot, '$.space.team') WHERE snapshot IS NOT NULL AND json_valid(snapshot);
