-- Undoes version 14 (TypeORM migrations' down).

ALTER TABLE :SCHEMA.job
  DROP COLUMN IF EXISTS span_id,
  DROP COLUMN IF EXISTS trace_id,
  DROP COLUMN IF EXISTS handler_started_at;

ALTER TABLE :SCHEMA.job_execution
  DROP COLUMN IF EXISTS span_id,
  DROP COLUMN IF EXISTS trace_id,
  DROP COLUMN IF EXISTS claimed_at;
