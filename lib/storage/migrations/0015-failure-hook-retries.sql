-- Version 15: an onFailure hook that throws runs again, with backoff, a bounded number of times.
-- hook_attempt counts the hook's runs started, hook_run_at holds the time of a pending rerun, and
-- hook_error the error of its last failed run (sealed like last_error when the job is encrypted).
-- failure_hook 'failed' ends a hook whose runs are used up, or that threw a PermanentJobError.
ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS hook_attempt int NOT NULL DEFAULT 0;

ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS hook_run_at timestamptz;

ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS hook_error jsonb;

-- Added NOT VALID, then validated: the check of the existing rows takes no lock that stops writes.
ALTER TABLE :SCHEMA.job DROP CONSTRAINT IF EXISTS job_failure_hook_check;

ALTER TABLE :SCHEMA.job ADD CONSTRAINT job_failure_hook_check
  CHECK (failure_hook IN ('pending', 'running', 'done', 'failed')) NOT VALID;

ALTER TABLE :SCHEMA.job VALIDATE CONSTRAINT job_failure_hook_check;
