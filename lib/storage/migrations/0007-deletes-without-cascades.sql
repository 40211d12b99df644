-- Version 7: the rows that refer to a job (its executions, steps, signals, published values and
-- dependency links) are deleted with it by the trigger of the routine job_deleted (installed with
-- the routines, in the same transaction as this version), not by cascading foreign keys, which
-- cost a deleted job five times as much. Each statement may run again.
ALTER TABLE :SCHEMA.job_execution DROP CONSTRAINT IF EXISTS job_execution_job_id_fkey;
ALTER TABLE :SCHEMA.job_step DROP CONSTRAINT IF EXISTS job_step_job_id_fkey;
ALTER TABLE :SCHEMA.job_signal DROP CONSTRAINT IF EXISTS job_signal_job_id_fkey;
ALTER TABLE :SCHEMA.job_event_value DROP CONSTRAINT IF EXISTS job_event_value_job_id_fkey;
ALTER TABLE :SCHEMA.job_dependency DROP CONSTRAINT IF EXISTS job_dependency_child_id_fkey;
ALTER TABLE :SCHEMA.job_dependency DROP CONSTRAINT IF EXISTS job_dependency_parent_job_id_fkey;
