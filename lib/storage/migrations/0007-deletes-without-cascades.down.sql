DROP TRIGGER IF EXISTS job_deleted ON :SCHEMA.job;
DELETE FROM :SCHEMA.job_execution e WHERE NOT EXISTS (SELECT 1 FROM :SCHEMA.job j WHERE j.id = e.job_id);
DELETE FROM :SCHEMA.job_step s WHERE NOT EXISTS (SELECT 1 FROM :SCHEMA.job j WHERE j.id = s.job_id);
DELETE FROM :SCHEMA.job_signal s WHERE NOT EXISTS (SELECT 1 FROM :SCHEMA.job j WHERE j.id = s.job_id);
DELETE FROM :SCHEMA.job_event_value v WHERE NOT EXISTS (SELECT 1 FROM :SCHEMA.job j WHERE j.id = v.job_id);
DELETE FROM :SCHEMA.job_dependency d WHERE NOT EXISTS (SELECT 1 FROM :SCHEMA.job j WHERE j.id = d.child_id)
   OR (d.parent_job_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM :SCHEMA.job j WHERE j.id = d.parent_job_id));
ALTER TABLE :SCHEMA.job_execution DROP CONSTRAINT IF EXISTS job_execution_job_id_fkey;
ALTER TABLE :SCHEMA.job_execution ADD CONSTRAINT job_execution_job_id_fkey FOREIGN KEY (job_id) REFERENCES :SCHEMA.job(id) ON DELETE CASCADE;
ALTER TABLE :SCHEMA.job_step DROP CONSTRAINT IF EXISTS job_step_job_id_fkey;
ALTER TABLE :SCHEMA.job_step ADD CONSTRAINT job_step_job_id_fkey FOREIGN KEY (job_id) REFERENCES :SCHEMA.job(id) ON DELETE CASCADE;
ALTER TABLE :SCHEMA.job_signal DROP CONSTRAINT IF EXISTS job_signal_job_id_fkey;
ALTER TABLE :SCHEMA.job_signal ADD CONSTRAINT job_signal_job_id_fkey FOREIGN KEY (job_id) REFERENCES :SCHEMA.job(id) ON DELETE CASCADE;
ALTER TABLE :SCHEMA.job_event_value DROP CONSTRAINT IF EXISTS job_event_value_job_id_fkey;
ALTER TABLE :SCHEMA.job_event_value ADD CONSTRAINT job_event_value_job_id_fkey FOREIGN KEY (job_id) REFERENCES :SCHEMA.job(id) ON DELETE CASCADE;
ALTER TABLE :SCHEMA.job_dependency DROP CONSTRAINT IF EXISTS job_dependency_child_id_fkey;
ALTER TABLE :SCHEMA.job_dependency ADD CONSTRAINT job_dependency_child_id_fkey FOREIGN KEY (child_id) REFERENCES :SCHEMA.job(id) ON DELETE CASCADE;
ALTER TABLE :SCHEMA.job_dependency DROP CONSTRAINT IF EXISTS job_dependency_parent_job_id_fkey;
ALTER TABLE :SCHEMA.job_dependency ADD CONSTRAINT job_dependency_parent_job_id_fkey FOREIGN KEY (parent_job_id) REFERENCES :SCHEMA.job(id) ON DELETE CASCADE;
