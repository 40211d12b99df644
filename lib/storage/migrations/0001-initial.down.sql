-- Undoes version 1 (TypeORM migrations' down). Frozen with it.

DROP FUNCTION IF EXISTS :SCHEMA.settle_jobs(uuid[], text[], timestamptz, text);

DROP FUNCTION IF EXISTS :SCHEMA.release_children(uuid[], timestamptz, text);

DROP FUNCTION IF EXISTS :SCHEMA.reopen_job(uuid, text);

DROP TABLE IF EXISTS :SCHEMA.worker;

DROP TABLE IF EXISTS :SCHEMA.recurring_schedule;

DROP TABLE IF EXISTS :SCHEMA.job_dependency;

DROP TABLE IF EXISTS :SCHEMA.job_execution;

DROP TABLE IF EXISTS :SCHEMA.job;

DROP TABLE IF EXISTS :SCHEMA.job_batch;
