DELETE FROM :SCHEMA.job_dependency WHERE trigger = 'any-failure';
ALTER TABLE :SCHEMA.job_dependency DROP CONSTRAINT IF EXISTS job_dependency_trigger_check;
ALTER TABLE :SCHEMA.job_dependency
  ADD CONSTRAINT job_dependency_trigger_check CHECK (trigger IN ('success', 'failure', 'always'));
