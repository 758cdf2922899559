-- A running run's claim names its worker and lasts until lease_expires_at unless the worker renews
-- it; recovery ends only runs whose lease has passed (or, with SQLite, whose owner is not the one
-- process that serves the file: see store/serve-lock.ts). ISO 8601 UTC text, as every time here.
ALTER TABLE runs ADD COLUMN lease_owner TEXT;
ALTER TABLE runs ADD COLUMN lease_expires_at TEXT;
CREATE INDEX runs_leases ON runs (lease_expires_at) WHERE status = 'running';

