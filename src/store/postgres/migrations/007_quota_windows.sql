-- The request quotas' shared counters (services/rate-limits.ts): the units of each quota's window
-- that the replicas have taken, in batches. UNLOGGED: a counter is worth nothing after a crash (its
-- window is a minute), so its writes skip the WAL and never wait for a flush. Windows older than
-- the current ones are deleted by the maintenance pass.
CREATE UNLOGGED TABLE quota_windows (
  key          text COLLATE "C" NOT NULL,
  window_no    bigint NOT NULL,
  used         integer NOT NULL CHECK (used >= 0),
  granted      integer NOT NULL CHECK (granted >= 0),
  PRIMARY KEY (key, window_no)
);
