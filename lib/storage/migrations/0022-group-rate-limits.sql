-- Version 22: a rate limit per group (JobsModule's queues.<q>.groups.rateLimit): each group of the queue
-- may start at most group_rate_max jobs in any group_rate_per_ms, across instances, such as 10/s per
-- shop. The controlled claim counts each group's starts under the queue's row lock, in a sliding-window
-- log per group kept in the format of job_queue's own (rate_log_at, rate_log_n), and records them there.

-- At most group_rate_max jobs of one group of the queue start in any group_rate_per_ms ms; the code's alone.
ALTER TABLE :SCHEMA.job_queue ADD COLUMN IF NOT EXISTS group_rate_max int CHECK (group_rate_max >= 1);
ALTER TABLE :SCHEMA.job_queue ADD COLUMN IF NOT EXISTS group_rate_per_ms int CHECK (group_rate_per_ms >= 1);

-- Each group's recent starts: one row per group that started a job in its queue's window lately
-- (retention deletes the rows whose whole log is past it). last_at is the latest entry of the log, so
-- a claim finds the groups whose window may be full, and the latest start of the queue, in the index.
CREATE TABLE IF NOT EXISTS :SCHEMA.job_group_rate (
  queue text NOT NULL,
  group_key text NOT NULL,
  rate_log_at timestamptz[] NOT NULL DEFAULT '{}',
  rate_log_n int[] NOT NULL DEFAULT '{}',
  last_at timestamptz NOT NULL,
  PRIMARY KEY (queue, group_key)
);

CREATE INDEX IF NOT EXISTS job_group_rate_recent_idx ON :SCHEMA.job_group_rate (queue, last_at);
