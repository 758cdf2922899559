-- The W3C trace context (a traceparent) of the request or trigger that queued a run, so that the
-- worker that executes it (in this process or, on PostgreSQL, any replica) makes the run's span a
-- child of that trace. Null when tracing was off at acceptance.
ALTER TABLE runs ADD COLUMN trace_parent TEXT;
