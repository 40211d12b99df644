ALTER TABLE :SCHEMA.job_queue DROP COLUMN IF EXISTS waiting_until;

ALTER TABLE :SCHEMA.job_queue DROP COLUMN IF EXISTS waiting_workers;
