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
 * no NOTIFY). The end of a child of ctx.invoke() also wakes its parent.
 * The trigger is created with the function and pointed at the newest body:
 * the payload is the same topic in every build.
 */
export const AWAITED_JOB_ENDED = defineRoutine(
  'awaited_job_ended',
  `CREATE FUNCTION :SCHEMA.:ROUTINE() RETURNS trigger LANGUAGE plpgsql AS $fn$
     DECLARE
       v_at timestamptz := coalesce(NEW.completed_at, now());
       v_queue text;
       v_due boolean;
     BEGIN
       PERFORM pg_notify(:CHANNEL, '${TOPIC_PREFIXES.ended}' || NEW.id::text);
       -- A child of ctx.invoke(): its parent stops waiting for it, due now if it is parked in the queue
       -- (at the child's end, on the app's clock), else its park's write finds the flag cleared. The
       -- parent's row is updated whatever it holds, so a park being written waits for this.
       IF NEW.invoked_by IS NOT NULL THEN
         UPDATE :SCHEMA.job
            SET run_at = CASE WHEN state = 'queued' AND awaits_signal = 'child:' || NEW.id THEN least(run_at, v_at) ELSE run_at END,
                awaits_signal = CASE WHEN awaits_signal = 'child:' || NEW.id THEN NULL ELSE awaits_signal END
          WHERE id = NEW.invoked_by AND state NOT IN (${sqlLiterals(TERMINAL_JOB_STATES)})
         RETURNING queue, state = 'queued' AND run_at <= v_at INTO v_queue, v_due;
         IF v_due THEN
           PERFORM pg_notify(:CHANNEL, '${TOPIC_PREFIXES.queue}' || v_queue);
         END IF;
       END IF;
       RETURN NULL;
     END $fn$;
   CREATE OR REPLACE TRIGGER awaited_job_ended AFTER UPDATE OF state ON :SCHEMA.job
     FOR EACH ROW
     WHEN (NEW.awaited AND NEW.state IN (${sqlLiterals(TERMINAL_JOB_STATES)}) AND OLD.state IS DISTINCT FROM NEW.state)
     EXECUTE FUNCTION :SCHEMA.:ROUTINE()`,
);
