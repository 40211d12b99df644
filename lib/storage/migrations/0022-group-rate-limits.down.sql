-- Undoes version 22 (TypeORM migrations' down).

DROP TABLE IF EXISTS :SCHEMA.job_group_rate;

ALTER TABLE :SCHEMA.job_queue DROP COLUMN IF EXISTS group_rate_per_ms;

ALTER TABLE :SCHEMA.job_queue DROP COLUMN IF EXISTS group_rate_max;
