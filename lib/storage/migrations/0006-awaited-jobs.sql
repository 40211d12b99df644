-- Version 6: a job someone waits for (JobQueue.waitFor). The flag lets the routine
-- awaited_job_ended's trigger announce only the ends that are awaited: a NOTIFY for every
-- finished job would cost each outcome write a round on the notification queue's lock.

ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS awaited boolean NOT NULL DEFAULT false;
