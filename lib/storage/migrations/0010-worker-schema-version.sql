-- Version 10: each worker's row says the latest schema version its build knows, so a start can
-- tell whether a build older than a breaking version is still running.

ALTER TABLE :SCHEMA.worker ADD COLUMN IF NOT EXISTS schema_version int;
