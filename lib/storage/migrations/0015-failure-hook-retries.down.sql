-- Version 4's check knows no 'failed' hook: those rows read as done, which is what an older build
-- does with a hook that threw.
ALTER TABLE :SCHEMA.job DROP CONSTRAINT IF EXISTS job_failure_hook_check;

UPDATE :SCHEMA.job SET failure_hook = 'done' WHERE failure_hook = 'failed';

ALTER TABLE :SCHEMA.job ADD CONSTRAINT job_failure_hook_check CHECK (failure_hook IN ('pending', 'running', 'done'));

ALTER TABLE :SCHEMA.job DROP COLUMN IF EXISTS hook_error;

ALTER TABLE :SCHEMA.job DROP COLUMN IF EXISTS hook_run_at;

ALTER TABLE :SCHEMA.job DROP COLUMN IF EXISTS hook_attempt;
