-- Version 4: the tables, columns, indexes and constraints added since release 0.1.0 (versions 1-3),
-- grouped by table.
--
-- Every statement may run again (IF NOT EXISTS, or a changed constraint or index dropped before it
-- is made again), so the file also brings a schema made by an unreleased build (a development
-- database made from main) to this version's shape: see migrate --reset-unreleased. Columns are
-- added by name, grouped by what they are for, so a table made with fewer of them gets the rest.

-- job -----------------------------------------------------------------------------------------

-- Flow control: a serial key (at most one active job per key), a deadline to start by, and the
-- way a unique key is held (while queued, queued or active, until succeeded; or for a window).
ALTER TABLE :SCHEMA.job
  ADD COLUMN IF NOT EXISTS serial_key text,
  ADD COLUMN IF NOT EXISTS deadline timestamptz,
  ADD COLUMN IF NOT EXISTS unique_while text CHECK (unique_while IN ('queued', 'queued-or-active', 'until-succeeded')),
  ADD COLUMN IF NOT EXISTS unique_window bigint;

-- onFailure hooks, recorded with the failure: 'pending' until an instance with the handler claims
-- the hook ('running', leased like a job) and ends it ('done', or 'failed' once its runs are used
-- up). A hook that throws runs again with backoff: hook_attempt counts its runs, hook_run_at holds
-- a pending rerun's time, hook_error the last run's error (sealed when the job is encrypted).
ALTER TABLE :SCHEMA.job
  ADD COLUMN IF NOT EXISTS failure_hook text,
  ADD COLUMN IF NOT EXISTS hook_worker_id text,
  ADD COLUMN IF NOT EXISTS hook_lease_expires_at timestamptz,
  ADD COLUMN IF NOT EXISTS hook_attempt int NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS hook_run_at timestamptz,
  ADD COLUMN IF NOT EXISTS hook_error jsonb;

ALTER TABLE :SCHEMA.job DROP CONSTRAINT IF EXISTS job_failure_hook_check;

ALTER TABLE :SCHEMA.job ADD CONSTRAINT job_failure_hook_check
  CHECK (failure_hook IN ('pending', 'running', 'done', 'failed'));

-- Set on a job written with edges to parents: only such a job's claim reads job_dependency for
-- ctx.parentIds and ctx.batchId, so the claim of every other job pays nothing for them.
ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS has_parents boolean NOT NULL DEFAULT false;

-- A successful attempt, which leaves no history row, keeps its handler's start and its span here
-- (its claim time is started_at).
ALTER TABLE :SCHEMA.job
  ADD COLUMN IF NOT EXISTS handler_started_at timestamptz,
  ADD COLUMN IF NOT EXISTS trace_id text,
  ADD COLUMN IF NOT EXISTS span_id text;

-- A job of a limited queue claimed ahead for a worker, to start in the place of one of its running
-- jobs of the queue that succeeds: the queue's limit counts it from that success on.
ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS reserved boolean NOT NULL DEFAULT false;

-- The job's context (ctx.context), a small JSON object sealed like the payload; null for none.
ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS context jsonb;

-- Unique jobs: one index per way of holding a key, so the database refuses the duplicate whichever
-- instance writes it. Release 0.1.0's index of any key in the live states goes: no API of that
-- release sets unique keys.
DROP INDEX IF EXISTS :SCHEMA.job_unique_key_idx;

CREATE UNIQUE INDEX IF NOT EXISTS job_unique_queued_idx ON :SCHEMA.job (unique_key)
  WHERE unique_key IS NOT NULL AND unique_window IS NULL AND unique_while = 'queued'
    AND state IN ('waiting', 'queued');

CREATE UNIQUE INDEX IF NOT EXISTS job_unique_live_idx ON :SCHEMA.job (unique_key)
  WHERE unique_key IS NOT NULL AND unique_window IS NULL AND unique_while = 'queued-or-active'
    AND state IN ('waiting', 'queued', 'active');

CREATE UNIQUE INDEX IF NOT EXISTS job_unique_unsucceeded_idx ON :SCHEMA.job (unique_key)
  WHERE unique_key IS NOT NULL AND unique_window IS NULL AND unique_while = 'until-succeeded'
    AND state IN ('waiting', 'queued', 'active', 'failed');

CREATE UNIQUE INDEX IF NOT EXISTS job_unique_window_idx ON :SCHEMA.job (unique_key, unique_window)
  WHERE unique_key IS NOT NULL AND unique_window IS NOT NULL;

-- Serial keys: at most one active job per key, and the claim finds each key's next job in order.
CREATE UNIQUE INDEX IF NOT EXISTS job_serial_active_idx ON :SCHEMA.job (serial_key)
  WHERE serial_key IS NOT NULL AND state = 'active';

CREATE INDEX IF NOT EXISTS job_serial_claim_idx ON :SCHEMA.job (queue, serial_key, priority DESC, id)
  WHERE state = 'queued' AND serial_key IS NOT NULL;

-- The claim index orders a queue's plain jobs apart from those with a group or a serial key, so
-- either claim reads only its own: the plain claim's jobs never have them, and a tenant's backlog
-- never lies in the way of the few plain jobs of a grouped queue. The key is written as one
-- IS NULL test because the planner matches a boolean index key only in that positive form: it
-- rewrites NOT (a IS NOT NULL OR b IS NOT NULL) into two separate tests that match no key.
DROP INDEX IF EXISTS :SCHEMA.job_claim_idx;

CREATE INDEX IF NOT EXISTS job_claim_idx ON :SCHEMA.job
  (queue, (coalesce(group_key, serial_key) IS NULL), priority DESC, run_at, id)
  WHERE state = 'queued';

-- Groups: the claim walks the groups with queued work and takes each one's next jobs, and reads
-- the grouped work that became due since it last looked (job_queue.group_seen_at), so a returning
-- group is served ahead of the rotation.
CREATE INDEX IF NOT EXISTS job_group_claim_idx ON :SCHEMA.job (queue, group_key, priority DESC, run_at, id)
  WHERE state = 'queued' AND group_key IS NOT NULL;

CREATE INDEX IF NOT EXISTS job_group_arrival_idx ON :SCHEMA.job (queue, run_at)
  WHERE state = 'queued' AND group_key IS NOT NULL;

-- Deadlines: the sweep that fails jobs whose deadline passed before they could start.
CREATE INDEX IF NOT EXISTS job_deadline_idx ON :SCHEMA.job (deadline)
  WHERE deadline IS NOT NULL AND state IN ('waiting', 'queued');

-- Hooks waiting or running: what every instance's sweep looks for. Failures are rare, and ended
-- hooks leave the index, so it stays small.
CREATE INDEX IF NOT EXISTS job_failure_hook_idx ON :SCHEMA.job (id) WHERE failure_hook IN ('pending', 'running');

-- job_execution -------------------------------------------------------------------------------

-- Each attempt's claim time and span (with tracing on), kept on a failed, cancelled or snoozed
-- attempt's row.
ALTER TABLE :SCHEMA.job_execution
  ADD COLUMN IF NOT EXISTS claimed_at timestamptz,
  ADD COLUMN IF NOT EXISTS trace_id text,
  ADD COLUMN IF NOT EXISTS span_id text;

-- A snoozed attempt leaves a history row of its own kind.
ALTER TABLE :SCHEMA.job_execution DROP CONSTRAINT IF EXISTS job_execution_state_check;

ALTER TABLE :SCHEMA.job_execution ADD CONSTRAINT job_execution_state_check
  CHECK (state IN ('active', 'succeeded', 'failed', 'interrupted', 'cancelled', 'snoozed'));

-- job_dependency ------------------------------------------------------------------------------

-- An edge may wait with 'any-failure': its child runs when at least one of the parents it waits on
-- so failed, where 'failure' on several parents needs every one to fail. NOT VALID: every existing
-- row meets the narrower check it replaces, so the table is not scanned under the lock; new rows
-- are checked all the same.
ALTER TABLE :SCHEMA.job_dependency DROP CONSTRAINT IF EXISTS job_dependency_trigger_check;

ALTER TABLE :SCHEMA.job_dependency ADD CONSTRAINT job_dependency_trigger_check
  CHECK (trigger IN ('success', 'failure', 'any-failure', 'always')) NOT VALID;

-- job_step ------------------------------------------------------------------------------------

-- Durable steps: one row per finished ctx.step() or ctx.sleep() of a job, written by the attempt
-- that owns the job (the insert reads the job row under the fence); a later attempt reads them
-- back instead of running the step again. A sleep's row carries the time it wakes.
CREATE TABLE IF NOT EXISTS :SCHEMA.job_step (
  job_id uuid NOT NULL REFERENCES :SCHEMA.job(id) ON DELETE CASCADE,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  kind text NOT NULL DEFAULT 'step' CHECK (kind IN ('step', 'sleep')),
  attempt int NOT NULL,
  result jsonb,
  completed_at timestamptz NOT NULL,
  wake_at timestamptz,
  -- The order they were recorded in: completed_at follows the app's clock, which may stand still.
  seq bigint GENERATED ALWAYS AS IDENTITY,
  CHECK ((kind = 'sleep') = (wake_at IS NOT NULL)),
  PRIMARY KEY (job_id, name)
);

-- job_queue -----------------------------------------------------------------------------------

-- A queue's settings (concurrency and rate limits, pause) and the state its controlled claim keeps
-- to enforce them across instances; a queue with none of them keeps the plain claim. Each limit
-- keeps the value the code declared beside the value in force, so a start can tell "the code
-- changed" (apply it) from "the same code, changed at run time" (keep it).
CREATE TABLE IF NOT EXISTS :SCHEMA.job_queue (
  name text PRIMARY KEY,
  concurrency int CHECK (concurrency >= 1),
  concurrency_code int,
  concurrency_source text NOT NULL DEFAULT 'code' CHECK (concurrency_source IN ('code', 'runtime')),
  rate_max int CHECK (rate_max >= 1),
  rate_per_ms int CHECK (rate_per_ms >= 1),
  rate_code jsonb,
  rate_source text NOT NULL DEFAULT 'code' CHECK (rate_source IN ('code', 'runtime')),
  paused boolean NOT NULL DEFAULT false,
  -- Set by the first enqueue of a job with a group or a serial key: the plain claim cannot honour them.
  has_groups boolean NOT NULL DEFAULT false,
  has_serial boolean NOT NULL DEFAULT false,
  -- Fairness between groups: a group holding at least group_min_inflight jobs in flight and more
  -- than group_share of the queue's is served after the others.
  group_min_inflight int NOT NULL DEFAULT 2 CHECK (group_min_inflight >= 1),
  group_share real NOT NULL DEFAULT 0.5 CHECK (group_share > 0 AND group_share <= 1),
  -- The group the last claim served: the next one starts after it (round robin).
  group_cursor text,
  -- Starts within the rate window, as (time, count) pairs: an exact sliding window.
  rate_log_at timestamptz[] NOT NULL DEFAULT '{}',
  rate_log_n int[] NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Limits per group (queues.<q>.groups): at most group_concurrency running jobs, and at most
-- group_rate_max starts in any group_rate_per_ms ms, for each group of the queue; and the latest
-- run_at among the arriving grouped jobs a claim read, from which the next claim reads on.
ALTER TABLE :SCHEMA.job_queue
  ADD COLUMN IF NOT EXISTS group_concurrency int CHECK (group_concurrency >= 1),
  ADD COLUMN IF NOT EXISTS group_rate_max int CHECK (group_rate_max >= 1),
  ADD COLUMN IF NOT EXISTS group_rate_per_ms int CHECK (group_rate_per_ms >= 1),
  ADD COLUMN IF NOT EXISTS group_seen_at timestamptz;

-- The workers the queue's concurrency limit keeps waiting, each with the time its wait lapses:
-- while another worker waits, a claim stops at its share of the limit.
ALTER TABLE :SCHEMA.job_queue
  ADD COLUMN IF NOT EXISTS waiting_workers text[] NOT NULL DEFAULT '{}',
  ADD COLUMN IF NOT EXISTS waiting_until timestamptz[] NOT NULL DEFAULT '{}';

-- The service whose code declared the limits (null: set at run time).
ALTER TABLE :SCHEMA.job_queue ADD COLUMN IF NOT EXISTS code_service text;

-- job_name_limit ------------------------------------------------------------------------------

-- Limits on one job name inside its queue (@Job's concurrency and rateLimit), kept as job_queue
-- keeps a queue's.
CREATE TABLE IF NOT EXISTS :SCHEMA.job_name_limit (
  queue text NOT NULL,
  name text NOT NULL,
  concurrency int CHECK (concurrency >= 1),
  concurrency_code int,
  concurrency_source text NOT NULL DEFAULT 'code' CHECK (concurrency_source IN ('code', 'runtime')),
  rate_max int CHECK (rate_max >= 1),
  rate_per_ms int CHECK (rate_per_ms >= 1),
  rate_code jsonb,
  rate_source text NOT NULL DEFAULT 'code' CHECK (rate_source IN ('code', 'runtime')),
  rate_log_at timestamptz[] NOT NULL DEFAULT '{}',
  rate_log_n int[] NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (queue, name)
);

-- The rate-limit key the job name's @Job refers to (rateLimit: 'partner-api'), and the service
-- whose code declared the limits.
ALTER TABLE :SCHEMA.job_name_limit
  ADD COLUMN IF NOT EXISTS rate_key text,
  ADD COLUMN IF NOT EXISTS code_service text;

-- job_rate_limit ------------------------------------------------------------------------------

-- Rate limits by key (JobsModule's rateLimits), shared across job types and queues: one row per
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

ALTER TABLE :SCHEMA.job_rate_limit ADD COLUMN IF NOT EXISTS code_service text;

-- job_group_limit, job_group_rate -------------------------------------------------------------

-- One group's own concurrency limit, set at run time (JobQueues.setGroupLimits): it overrides the
-- queue's group_concurrency.
CREATE TABLE IF NOT EXISTS :SCHEMA.job_group_limit (
  queue text NOT NULL,
  group_key text NOT NULL,
  concurrency int NOT NULL CHECK (concurrency >= 1),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (queue, group_key)
);

-- Each group's recent starts under the queue's group_rate_max, in the format of job_queue's own
-- log: one row per group that started a job in its queue's window lately (retention deletes the
-- rows whose whole log is past it). last_at is the log's latest entry, so a claim finds the groups
-- whose window may be full, and the latest start of the queue, in the index.
CREATE TABLE IF NOT EXISTS :SCHEMA.job_group_rate (
  queue text NOT NULL,
  group_key text NOT NULL,
  rate_log_at timestamptz[] NOT NULL DEFAULT '{}',
  rate_log_n int[] NOT NULL DEFAULT '{}',
  last_at timestamptz NOT NULL,
  PRIMARY KEY (queue, group_key)
);

CREATE INDEX IF NOT EXISTS job_group_rate_recent_idx ON :SCHEMA.job_group_rate (queue, last_at);

-- recurring_schedule --------------------------------------------------------------------------

-- The service whose code declared the schedule (null: made at run time), and a digest of that
-- declaration.
ALTER TABLE :SCHEMA.recurring_schedule
  ADD COLUMN IF NOT EXISTS service text,
  ADD COLUMN IF NOT EXISTS definition_hash text;

-- worker --------------------------------------------------------------------------------------

-- The latest schema version the worker's build knows: a breaking version waits while a worker of
-- an older build is alive (a 0.1.0 worker's row has none, and counts as older). Then the
-- connections its instance holds open and may open at most, its service, and the job names it
-- handles, so jobs that no live worker handles can be reported.
ALTER TABLE :SCHEMA.worker
  ADD COLUMN IF NOT EXISTS schema_version int,
  ADD COLUMN IF NOT EXISTS connections_open int,
  ADD COLUMN IF NOT EXISTS connections_max int,
  ADD COLUMN IF NOT EXISTS service text,
  ADD COLUMN IF NOT EXISTS job_names text[];

-- service_build, service_owner, service_instance ----------------------------------------------

-- Services own what their code declares. A build of a service is the fingerprint of what it
-- declares: service_build records when each was first seen, service_instance which build each
-- running app instance is (its heartbeat), and service_owner which build's declarations are in
-- force. A newer build takes over; an older one only once no instance of the build in force is alive.
CREATE TABLE IF NOT EXISTS :SCHEMA.service_build (
  service text NOT NULL,
  build text NOT NULL,
  first_seen_at timestamptz NOT NULL,
  PRIMARY KEY (service, build)
);

CREATE TABLE IF NOT EXISTS :SCHEMA.service_owner (
  service text PRIMARY KEY,
  build text NOT NULL,
  since timestamptz NOT NULL
);

CREATE TABLE IF NOT EXISTS :SCHEMA.service_instance (
  id text PRIMARY KEY,
  service text NOT NULL,
  build text NOT NULL,
  started_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  stopped_at timestamptz
);

CREATE INDEX IF NOT EXISTS service_instance_build_idx ON :SCHEMA.service_instance (service, build);
