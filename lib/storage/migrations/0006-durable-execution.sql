-- Version 6: durable execution. Each statement may run again.

-- A job someone waits for (JobQueue.waitFor). The flag lets the trigger of the routine
-- awaited_job_ended announce only the ends that are awaited: a NOTIFY for every finished job would
-- cost each outcome write a round on the notification queue's lock.
ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS awaited boolean NOT NULL DEFAULT false;

-- The signal name a job waits for (ctx.waitForSignal), set while it waits: a signal of that name
-- clears it and, when the job is parked in the queue, makes it due. The park's outcome write reads
-- it under the row lock, so a signal that came while the attempt was ending still wakes the job.
ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS awaits_signal text;

-- The job whose ctx.invoke() enqueued this one: its end wakes that parent (see awaited_job_ended).
-- No foreign key: a parent deleted first leaves a link that wakes nothing, and deletes of jobs pay no
-- check for it.
ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS invoked_by uuid;

CREATE INDEX IF NOT EXISTS job_invoked_by_idx ON :SCHEMA.job (invoked_by) WHERE invoked_by IS NOT NULL;

-- Signals sent to a job (JobQueue.signal), kept until a ctx.waitForSignal() of the name consumes
-- the oldest; consumed ones stay as the job's history and go with it.
CREATE TABLE IF NOT EXISTS :SCHEMA.job_signal (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id uuid NOT NULL REFERENCES :SCHEMA.job(id) ON DELETE CASCADE,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  payload jsonb,
  sent_at timestamptz NOT NULL,
  consumed_at timestamptz
);

CREATE INDEX IF NOT EXISTS job_signal_job_name_idx ON :SCHEMA.job_signal (job_id, name, id);

-- Values a job publishes (ctx.setEvent), the last write of a key winning; read by JobQueue.getEvent.
CREATE TABLE IF NOT EXISTS :SCHEMA.job_event_value (
  job_id uuid NOT NULL REFERENCES :SCHEMA.job(id) ON DELETE CASCADE,
  key text NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
  value jsonb,
  set_at timestamptz NOT NULL,
  PRIMARY KEY (job_id, key)
);

-- A signal wait is a step of its own kind: its row carries its deadline (wake_at) while it waits,
-- and the signal's payload once it has one.
ALTER TABLE :SCHEMA.job_step DROP CONSTRAINT IF EXISTS job_step_kind_check;
ALTER TABLE :SCHEMA.job_step ADD CONSTRAINT job_step_kind_check CHECK (kind IN ('step', 'sleep', 'signal'));
ALTER TABLE :SCHEMA.job_step DROP CONSTRAINT IF EXISTS job_step_check;
ALTER TABLE :SCHEMA.job_step ADD CONSTRAINT job_step_check CHECK ((kind = 'step') = (wake_at IS NULL));
