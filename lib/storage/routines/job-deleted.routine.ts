import { defineRoutine } from './routine.js';

/**
 * Deletes the rows that belong to the jobs a statement deleted: their
 * executions, steps, signals, published values and dependency links. One
 * statement-level trigger instead of a cascading foreign key per table: a
 * cascade runs a DELETE per table for each deleted job, this runs one per
 * table for all of them, read from the statement's transition table
 * (bench/statement-cost.mjs, backend CPU per job in batches of 500: 20-21 µs
 * through the cascades, 3.7-4.2 µs through this). It fires for every
 * statement that deletes jobs, whichever build sent it, so an older build's
 * retention leaves no orphans either.
 *
 * Without the foreign keys, a row that refers to a job is written only by a
 * statement that holds the job's row (an outcome, a fenced step or value, a
 * signal that updates the job, a flow that locks its parents); only finished
 * jobs are deleted, and none of those writes is made for a finished job.
 * The trigger is created with the function and points at the newest body.
 */
export const JOB_DELETED = defineRoutine(
  'job_deleted',
  `CREATE FUNCTION :SCHEMA.:ROUTINE() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       DELETE FROM :SCHEMA.job_execution WHERE job_id IN (SELECT id FROM gone);
       DELETE FROM :SCHEMA.job_step WHERE job_id IN (SELECT id FROM gone);
       DELETE FROM :SCHEMA.job_signal WHERE job_id IN (SELECT id FROM gone);
       DELETE FROM :SCHEMA.job_event_value WHERE job_id IN (SELECT id FROM gone);
       DELETE FROM :SCHEMA.job_dependency WHERE child_id IN (SELECT id FROM gone);
       DELETE FROM :SCHEMA.job_dependency WHERE parent_job_id IN (SELECT id FROM gone);
       RETURN NULL;
     END $fn$;
   CREATE OR REPLACE TRIGGER job_deleted AFTER DELETE ON :SCHEMA.job
     REFERENCING OLD TABLE AS gone
     FOR EACH STATEMENT EXECUTE FUNCTION :SCHEMA.:ROUTINE()`,
);
