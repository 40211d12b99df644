-- Version 21: an edge may wait with 'any-failure': its child runs when at least one of the parents it
-- waits on so failed (release_children), where 'failure' on several parents needs every one to fail.
-- NOT VALID: every existing row already meets the stricter check it replaces, so the table is not
-- scanned under the lock the change takes; new rows are checked all the same.
ALTER TABLE :SCHEMA.job_dependency DROP CONSTRAINT IF EXISTS job_dependency_trigger_check;
ALTER TABLE :SCHEMA.job_dependency
  ADD CONSTRAINT job_dependency_trigger_check CHECK (trigger IN ('success', 'failure', 'any-failure', 'always')) NOT VALID;
