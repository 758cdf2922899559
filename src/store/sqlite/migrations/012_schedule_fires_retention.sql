-- schedule_fires had no retention: a row per due time of every schedule, kept forever, and kept
-- after its schedule was deleted. From now on each schedule keeps its newest FIRES_KEPT rows (the
-- write that records a due time trims the older ones) and a schedule's rows go with it. This
-- applies the same to what is there already.
DELETE FROM schedule_fires WHERE schedule_id NOT IN (SELECT id FROM schedules);
DELETE FROM schedule_fires WHERE rowid IN (
  SELECT rowid FROM (SELECT rowid, row_number() OVER (PARTITION BY schedule_id ORDER BY due_at DESC) AS n FROM schedule_fires)
  WHERE n > 100
);
