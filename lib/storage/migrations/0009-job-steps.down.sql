-- Undoes version 9 (TypeORM migrations' down).

DROP TABLE IF EXISTS :SCHEMA.job_step;
