-- Undoes version 4 (TypeORM migrations' down): back to release 0.1.0's tables. Rows that only
-- this version allows are first made into what 0.1.0 knows: a snoozed attempt reads as
-- interrupted, and an 'any-failure' edge goes.

DROP TABLE IF EXISTS :SCHEMA.service_instance;

DROP TABLE IF EXISTS :SCHEMA.service_owner;

DROP TABLE IF EXISTS :SCHEMA.service_build;

ALTER TABLE :SCHEMA.worker
  DROP COLUMN IF EXISTS job_names,
  DROP COLUMN IF EXISTS service,
  DROP COLUMN IF EXISTS connections_max,
  DROP COLUMN IF EXISTS connections_open,
  DROP COLUMN IF EXISTS schema_version;

ALTER TABLE :SCHEMA.recurring_schedule
  DROP COLUMN IF EXISTS definition_hash,
  DROP COLUMN IF EXISTS service;

DROP TABLE IF EXISTS :SCHEMA.job_group_rate;

DROP TABLE IF EXISTS :SCHEMA.job_group_limit;

DROP TABLE IF EXISTS :SCHEMA.job_rate_limit;

DROP TABLE IF EXISTS :SCHEMA.job_name_limit;

DROP TABLE IF EXISTS :SCHEMA.job_queue;

DROP TABLE IF EXISTS :SCHEMA.job_step;

DELETE FROM :SCHEMA.job_dependency WHERE trigger = 'any-failure';

ALTER TABLE :SCHEMA.job_dependency DROP CONSTRAINT IF EXISTS job_dependency_trigger_check;

ALTER TABLE :SCHEMA.job_dependency ADD CONSTRAINT job_dependency_trigger_check
  CHECK (trigger IN ('success', 'failure', 'always'));

UPDATE :SCHEMA.job_execution SET state = 'interrupted' WHERE state = 'snoozed';

ALTER TABLE :SCHEMA.job_execution DROP CONSTRAINT IF EXISTS job_execution_state_check;

ALTER TABLE :SCHEMA.job_execution ADD CONSTRAINT job_execution_state_check
  CHECK (state IN ('active', 'succeeded', 'failed', 'interrupted', 'cancelled'));

ALTER TABLE :SCHEMA.job_execution
  DROP COLUMN IF EXISTS span_id,
  DROP COLUMN IF EXISTS trace_id,
  DROP COLUMN IF EXISTS claimed_at;

DROP INDEX IF EXISTS :SCHEMA.job_failure_hook_idx;

DROP INDEX IF EXISTS :SCHEMA.job_deadline_idx;

DROP INDEX IF EXISTS :SCHEMA.job_group_arrival_idx;

DROP INDEX IF EXISTS :SCHEMA.job_group_claim_idx;

DROP INDEX IF EXISTS :SCHEMA.job_claim_idx;

CREATE INDEX IF NOT EXISTS job_claim_idx ON :SCHEMA.job (queue, priority DESC, run_at, id) WHERE state = 'queued';

DROP INDEX IF EXISTS :SCHEMA.job_serial_claim_idx;

DROP INDEX IF EXISTS :SCHEMA.job_serial_active_idx;

DROP INDEX IF EXISTS :SCHEMA.job_unique_window_idx;

DROP INDEX IF EXISTS :SCHEMA.job_unique_unsucceeded_idx;

DROP INDEX IF EXISTS :SCHEMA.job_unique_live_idx;

DROP INDEX IF EXISTS :SCHEMA.job_unique_queued_idx;

CREATE UNIQUE INDEX IF NOT EXISTS job_unique_key_idx ON :SCHEMA.job (unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('waiting', 'queued', 'active');

ALTER TABLE :SCHEMA.job
  DROP COLUMN IF EXISTS context,
  DROP COLUMN IF EXISTS reserved,
  DROP COLUMN IF EXISTS span_id,
  DROP COLUMN IF EXISTS trace_id,
  DROP COLUMN IF EXISTS handler_started_at,
  DROP COLUMN IF EXISTS has_parents,
  DROP COLUMN IF EXISTS hook_error,
  DROP COLUMN IF EXISTS hook_run_at,
  DROP COLUMN IF EXISTS hook_attempt,
  DROP COLUMN IF EXISTS hook_lease_expires_at,
  DROP COLUMN IF EXISTS hook_worker_id,
  DROP COLUMN IF EXISTS failure_hook,
  DROP COLUMN IF EXISTS unique_window,
  DROP COLUMN IF EXISTS unique_while,
  DROP COLUMN IF EXISTS deadline,
  DROP COLUMN IF EXISTS serial_key;
