-- The W3C trace context (a traceparent) of the request or trigger that queued a run, so that the
-- replica that executes it makes the run's span a child of that trace (sqlite/migrations/014).
-- Null when tracing was off at acceptance.
ALTER TABLE runs ADD COLUMN trace_parent text;
