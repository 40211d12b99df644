-- Undoes version 10 (TypeORM migrations' down).

ALTER TABLE :SCHEMA.worker DROP COLUMN IF EXISTS schema_version;
