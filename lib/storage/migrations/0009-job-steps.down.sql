-- Undoes version 9 (TypeORM migrations' down).

DROP TABLE IF EXISTS :SCHEMA.job_step;

ALTER TABLE :SCHEMA.job DROP COLUMN IF EXISTS has_parents;
