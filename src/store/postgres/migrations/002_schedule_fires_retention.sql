-- schedule_fires had no retention (see the SQLite migration 012): each schedule keeps its newest
-- FIRES_KEPT rows from now on, and a schedule's rows go with it. This applies that to what is there.
DELETE FROM schedule_fires WHERE schedule_id NOT IN (SELECT id FROM schedules);
DELETE FROM schedule_fires WHERE (schedule_id, due_at) IN (
  SELECT schedule_id, due_at FROM (
    SELECT schedule_id, due_at, row_number() OVER (PARTITION BY schedule_id ORDER BY due_at DESC) AS n FROM schedule_fires
  ) AS ranked
  WHERE n > 100
);
