-- Undoes version 12 (TypeORM migrations' down).

DROP INDEX IF EXISTS :SCHEMA.job_group_arrival_idx;

DROP TABLE IF EXISTS :SCHEMA.job_group_limit;

ALTER TABLE :SCHEMA.job_queue DROP COLUMN IF EXISTS group_seen_at;

ALTER TABLE :SCHEMA.job_queue DROP COLUMN IF EXISTS group_concurrency;
