-- Version 4: onFailure hooks recorded with the failure. A job that fails for good is written with
-- failure_hook 'pending'; an instance that has the handler claims the hook ('running', leased like
-- a job), runs onFailure and marks it 'done'. A crash between the outcome and the hook no longer
-- loses it, and one after the hook ran no longer repeats it unless its record was lost too.

ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS failure_hook text
  CHECK (failure_hook IN ('pending', 'running', 'done'));

ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS hook_worker_id text;

ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS hook_lease_expires_at timestamptz;

-- Hooks waiting or running: what every instance's sweep looks for. Failures are rare, and done
-- hooks leave the index, so it stays small.
CREATE INDEX IF NOT EXISTS job_failure_hook_idx ON :SCHEMA.job (id) WHERE failure_hook IN ('pending', 'running');
