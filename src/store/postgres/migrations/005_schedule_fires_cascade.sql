-- A schedule's fire records go with it by the foreign key's cascade, not by a second DELETE: a
-- document's write removes its schedules in one statement (document-writes.ts), and the cascade
-- reads the fires as they are when the schedule row goes, so a fire recorded by a scheduler that
-- statement waited for goes too (a DELETE of the same statement would read its older snapshot).
DELETE FROM schedule_fires WHERE schedule_id NOT IN (SELECT id FROM schedules);
ALTER TABLE schedule_fires ADD CONSTRAINT schedule_fires_schedule_id_fkey
  FOREIGN KEY (schedule_id) REFERENCES schedules (id) ON DELETE CASCADE;
