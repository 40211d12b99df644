-- Undoes version 13 (TypeORM migrations' down).

ALTER TABLE :SCHEMA.job_name_limit DROP COLUMN IF EXISTS rate_key;

DROP TABLE IF EXISTS :SCHEMA.job_rate_limit;
