-- Version 13: rate limits by key (JobsModule's rateLimits), shared across job types and queues: one row per
-- key, holding its limit as job_queue holds a queue's, and its rate log. The controlled claim locks
-- a key's row after its queue's row, keys in key order.
CREATE TABLE IF NOT EXISTS :SCHEMA.job_rate_limit (
  key text PRIMARY KEY,
  rate_max int CHECK (rate_max >= 1),
  rate_per_ms int CHECK (rate_per_ms >= 1),
  rate_code jsonb,
  rate_source text NOT NULL DEFAULT 'code' CHECK (rate_source IN ('code', 'runtime')),
  rate_log_at timestamptz[] NOT NULL DEFAULT '{}',
  rate_log_n int[] NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- The key a job name's @Job refers to (rateLimit: 'partner-api'), as the code declares it.
ALTER TABLE :SCHEMA.job_name_limit ADD COLUMN IF NOT EXISTS rate_key text;
