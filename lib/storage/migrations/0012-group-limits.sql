-- Version 12: per-group concurrency, and a returning group served first. A queue's groups may be
-- held to a number of running jobs each (the queue's default, and per-group limits set at run
-- time), counted by the controlled claim under the queue's row lock; and the claim finds the groups
-- whose due work all arrived since it last looked, so it can serve them ahead of the rotation.

-- At most this many jobs of one group of the queue run at once (JobsModule's queues.<q>.groups.concurrency).
ALTER TABLE :SCHEMA.job_queue ADD COLUMN IF NOT EXISTS group_concurrency int CHECK (group_concurrency >= 1);

-- The latest run_at among the arriving grouped jobs a claim read: the next claim reads on from it.
ALTER TABLE :SCHEMA.job_queue ADD COLUMN IF NOT EXISTS group_seen_at timestamptz;

-- One group's own limit, set at run time (JobQueues.setGroupLimits): it overrides the queue's default.
CREATE TABLE IF NOT EXISTS :SCHEMA.job_group_limit (
  queue text NOT NULL,
  group_key text NOT NULL,
  concurrency int NOT NULL CHECK (concurrency >= 1),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (queue, group_key)
);

-- A queue's grouped work in the order it became due: the claim reads what arrived since it last looked.
CREATE INDEX IF NOT EXISTS job_group_arrival_idx ON :SCHEMA.job (queue, run_at)
  WHERE state = 'queued' AND group_key IS NOT NULL;
