-- Undoes version 3 (TypeORM migrations' down). Frozen with it.

DROP INDEX IF EXISTS :SCHEMA.job_failed_idx;
