-- A workflow run's agent steps run the agents as they were stored when the run was accepted: their
-- documents are kept with the run (a JSON object of agent slug to document), like the workflow's own
-- snapshot. Null for agent runs, workflows without agent steps, and runs accepted before this column.
ALTER TABLE runs ADD COLUMN step_agents TEXT;
