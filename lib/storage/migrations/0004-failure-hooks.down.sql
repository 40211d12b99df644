-- Undoes version 4 (TypeORM migrations' down). Frozen with it.

DROP INDEX IF EXISTS :SCHEMA.job_failure_hook_idx;

ALTER TABLE :SCHEMA.job DROP COLUMN IF EXISTS hook_lease_expires_at;

ALTER TABLE :SCHEMA.job DROP COLUMN IF EXISTS hook_worker_id;

ALTER TABLE :SCHEMA.job DROP COLUMN IF EXISTS failure_hook;
