-- Undoes version 5 (TypeORM migrations' down). Frozen with it.

DROP FUNCTION IF EXISTS :SCHEMA.claim_controlled(text, text[], int, timestamptz, text, float8);

ALTER TABLE :SCHEMA.job_execution DROP CONSTRAINT IF EXISTS job_execution_state_check;

ALTER TABLE :SCHEMA.job_execution ADD CONSTRAINT job_execution_state_check
  CHECK (state IN ('active', 'succeeded', 'failed', 'interrupted', 'cancelled'));

DROP INDEX IF EXISTS :SCHEMA.job_deadline_idx;

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

ALTER TABLE :SCHEMA.job DROP COLUMN IF EXISTS unique_window;

ALTER TABLE :SCHEMA.job DROP COLUMN IF EXISTS unique_while;

ALTER TABLE :SCHEMA.job DROP COLUMN IF EXISTS deadline;

ALTER TABLE :SCHEMA.job DROP COLUMN IF EXISTS serial_key;

DROP TABLE IF EXISTS :SCHEMA.job_name_limit;

DROP TABLE IF EXISTS :SCHEMA.job_queue;
