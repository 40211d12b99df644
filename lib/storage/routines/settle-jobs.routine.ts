import { RELEASE_CHILDREN } from './release-children.routine.js';
import { defineRoutine } from './routine.js';

/**
 * Settles the workflow rows of jobs that reached a final state (`p_ids`,
 * `p_states`): their batches' counts and states (a first failure cancels
 * the batch's unstarted members unless it allows failures), the edges that
 * wait on them or their batches, and the children those edges release;
 * skipped and cancelled jobs settle in turn until nothing is left.
 * `p_batches` holds each job's batch, for jobs the calling statement
 * deleted (a forgotten success); NULL reads them from the jobs' rows.
 */
export const SETTLE_JOBS = defineRoutine(
  'settle_jobs',
  `CREATE FUNCTION :SCHEMA.:ROUTINE(p_ids uuid[], p_states text[], p_batches uuid[], p_now timestamptz, p_channel text)
     RETURNS void LANGUAGE plpgsql AS $fn$
     DECLARE
       q_ids uuid[] := p_ids;
       q_states text[] := p_states;
       q_batches uuid[] := p_batches;
       n_ids uuid[];
       n_states text[];
       children uuid[];
       b record;
       c record;
       final text;
       extra uuid[];
     BEGIN
       WHILE coalesce(array_length(q_ids, 1), 0) > 0 LOOP
         n_ids := '{}';
         n_states := '{}';
         children := '{}';

         -- Batches one at a time, in id order, for the same reason as children.
         FOR c IN
           SELECT m.batch_id,
                  count(*) FILTER (WHERE m.state = 'succeeded')::int AS ok,
                  count(*) FILTER (WHERE m.state = 'failed')::int AS bad,
                  count(*) FILTER (WHERE m.state = 'cancelled')::int AS cxl,
                  count(*) FILTER (WHERE m.state = 'skipped')::int AS skp,
                  count(*)::int AS n
             FROM (SELECT t.state, CASE WHEN q_batches IS NULL THEN j.batch_id ELSE t.batch_id END AS batch_id
                     FROM unnest(q_ids, q_states, q_batches) AS t(id, state, batch_id)
                     LEFT JOIN :SCHEMA.job j ON q_batches IS NULL AND j.id = t.id) m
            WHERE m.batch_id IS NOT NULL
            GROUP BY m.batch_id ORDER BY m.batch_id
         LOOP
           UPDATE :SCHEMA.job_batch jb
              SET pending = jb.pending - c.n, succeeded = jb.succeeded + c.ok, failed = jb.failed + c.bad,
                  cancelled = jb.cancelled + c.cxl, skipped = jb.skipped + c.skp
            WHERE jb.id = c.batch_id
           RETURNING jb.*, c.bad AS new_failures INTO b;
           IF b.new_failures > 0 AND b.failed = b.new_failures THEN
             -- The first failure: catch callbacks run now, not at the end.
             WITH d AS (
               UPDATE :SCHEMA.job_dependency SET parent_outcome = 'failed'
                WHERE parent_batch_id = b.id AND trigger IN ('failure', 'any-failure') AND parent_outcome IS NULL
               RETURNING child_id
             ) SELECT children || coalesce(array_agg(child_id), '{}') INTO children FROM d;
             IF NOT coalesce((b.options ->> 'allowFailures')::boolean, false) THEN
               WITH c AS (
                 UPDATE :SCHEMA.job SET state = 'cancelled', completed_at = p_now,
                        last_error = jsonb_build_object('name', 'BatchFailed',
                          'message', 'Cancelled: another member of the batch failed')
                  WHERE batch_id = b.id AND state IN ('queued', 'waiting')
                 RETURNING id
               ) SELECT n_ids || coalesce(array_agg(id), '{}'),
                        n_states || coalesce(array_agg('cancelled'::text), '{}')
                   INTO n_ids, n_states FROM c;
             END IF;
           END IF;
           IF b.pending = 0 AND b.state = 'executing' THEN
             final := CASE
               WHEN b.failed = 0 AND b.cancelled = 0 AND b.skipped = 0 THEN 'succeeded'
               WHEN coalesce((b.options ->> 'cancelRequested')::boolean, false) THEN 'cancelled'
               WHEN b.failed = 0 AND b.skipped = 0 THEN 'cancelled'
               ELSE 'failed' END;
             UPDATE :SCHEMA.job_batch SET state = final, completed_at = p_now WHERE id = b.id;
             WITH d AS (
               UPDATE :SCHEMA.job_dependency SET parent_outcome = final
                WHERE parent_batch_id = b.id AND parent_outcome IS NULL
               RETURNING child_id
             ) SELECT children || coalesce(array_agg(child_id), '{}') INTO children FROM d;
           END IF;
         END LOOP;

         WITH d AS (
           UPDATE :SCHEMA.job_dependency d SET parent_outcome = t.state
             FROM unnest(q_ids, q_states) AS t(id, state)
            WHERE d.parent_job_id = t.id AND d.parent_outcome IS NULL
           RETURNING d.child_id
         ) SELECT children || coalesce(array_agg(child_id), '{}') INTO children FROM d;

         IF array_length(children, 1) > 0 THEN
           extra := :SCHEMA.${RELEASE_CHILDREN.name}(children, p_now, p_channel);
           n_ids := n_ids || extra;
           n_states := n_states || array_fill('skipped'::text, ARRAY[coalesce(array_length(extra, 1), 0)]);
         END IF;
         q_ids := n_ids;
         q_states := n_states;
         -- The jobs settled in turn (cancelled members, skipped children) still have their rows.
         q_batches := NULL;
       END LOOP;
     END $fn$`,
);
