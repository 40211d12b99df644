import { defineRoutine } from './routine.js';

/**
 * Undoes the settlement of a job that is retried (`p_previous`: the state
 * it ended in): its batch counts it as pending again and executes, and the
 * dependents it skipped, down the graph, wait again with their waits
 * recounted.
 */
export const REOPEN_JOB = defineRoutine(
  'reopen_job',
  `CREATE FUNCTION :SCHEMA.:ROUTINE(p_id uuid, p_previous text)
     RETURNS void LANGUAGE plpgsql AS $fn$
     DECLARE
       v_batch uuid;
       roots uuid[];
     BEGIN
       SELECT batch_id INTO v_batch FROM :SCHEMA.job WHERE id = p_id;
       IF v_batch IS NOT NULL THEN
         UPDATE :SCHEMA.job_batch
            SET pending = pending + 1,
                failed = failed - (p_previous = 'failed')::int,
                cancelled = cancelled - (p_previous = 'cancelled')::int,
                skipped = skipped - (p_previous = 'skipped')::int,
                state = 'executing', completed_at = NULL
          WHERE id = v_batch;
         -- Callbacks that the settled batch skipped wait again; those that ran stay as they are.
         UPDATE :SCHEMA.job_dependency d SET parent_outcome = NULL
           FROM :SCHEMA.job c
          WHERE d.parent_batch_id = v_batch AND c.id = d.child_id AND c.state IN ('skipped', 'waiting');
       END IF;
       UPDATE :SCHEMA.job_dependency SET parent_outcome = NULL WHERE parent_job_id = p_id;
       WITH RECURSIVE gone(id) AS (
         SELECT d.child_id FROM :SCHEMA.job_dependency d JOIN :SCHEMA.job c ON c.id = d.child_id
          WHERE (d.parent_job_id = p_id OR (v_batch IS NOT NULL AND d.parent_batch_id = v_batch)) AND c.state = 'skipped'
         UNION
         SELECT d.child_id FROM gone g JOIN :SCHEMA.job_dependency d ON d.parent_job_id = g.id
           JOIN :SCHEMA.job c ON c.id = d.child_id WHERE c.state = 'skipped'
       ) SELECT coalesce(array_agg(id), '{}') INTO roots FROM gone;
       UPDATE :SCHEMA.job_dependency SET parent_outcome = NULL WHERE parent_job_id = ANY(roots);
       UPDATE :SCHEMA.job j SET state = 'waiting', completed_at = NULL, last_error = NULL,
              remaining_dependencies = (SELECT count(*) FROM :SCHEMA.job_dependency d
                                         WHERE d.child_id = j.id AND d.parent_outcome IS NULL)
        WHERE j.id = ANY(roots);
       -- A dependent that waits on the reopened job again.
       UPDATE :SCHEMA.job j SET remaining_dependencies = (SELECT count(*) FROM :SCHEMA.job_dependency d
                                                        WHERE d.child_id = j.id AND d.parent_outcome IS NULL)
        WHERE j.state = 'waiting' AND j.id IN (SELECT child_id FROM :SCHEMA.job_dependency
                                               WHERE parent_job_id = p_id OR parent_batch_id = v_batch);
     END $fn$`,
);
