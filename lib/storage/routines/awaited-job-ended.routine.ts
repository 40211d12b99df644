import { TERMINAL_JOB_STATES } from '../../model/index.js';
import { sqlLiterals } from '../sql/sql-identifiers.js';
import { TOPIC_PREFIXES } from '../sql/notification-topics.js';
import { defineRoutine } from './routine.js';

/**
 * Announces the end of an awaited job (`job.awaited`, set by
 * `JobQueue.waitFor`) on the schema's channel, whichever statement ended
 * it: an outcome write, a cancel, a settle that skipped it, a rescue that
 * failed it. A trigger rather than a clause in each of those statements,
 * because they are many and a new one would silently miss it; its WHEN
 * clause keeps the cost off every job nobody waits for (no function call,
 * no NOTIFY). The trigger is created with the function and pointed at the
 * newest body: the payload is the same topic in every build.
 */
export const AWAITED_JOB_ENDED = defineRoutine(
  'awaited_job_ended',
  `CREATE FUNCTION :SCHEMA.:ROUTINE() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       PERFORM pg_notify(:CHANNEL, '${TOPIC_PREFIXES.ended}' || NEW.id::text);
       RETURN NULL;
     END $fn$;
   CREATE OR REPLACE TRIGGER awaited_job_ended AFTER UPDATE OF state ON :SCHEMA.job
     FOR EACH ROW
     WHEN (NEW.awaited AND NEW.state IN (${sqlLiterals(TERMINAL_JOB_STATES)}) AND OLD.state IS DISTINCT FROM NEW.state)
     EXECUTE FUNCTION :SCHEMA.:ROUTINE()`,
);
