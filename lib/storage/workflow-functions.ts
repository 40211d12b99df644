import { quoteIdent } from './sql-identifiers.js';

/**
 * Settlement of batches and dependencies, as database functions. They run
 * inside the very statement that records a job's outcome, so a crash can
 * never leave an outcome written but its dependents unreleased, and row
 * locks on the batch and child rows make "the last parent releases the
 * child" hold across any number of workers.
 */
export function workflowFunctions(schema: string): string[] {
  const s = quoteIdent(schema);
  return [
    // Children whose last open dependency just closed: run them if every
    // trigger is met, otherwise skip them (and hand the skip on).
    `CREATE OR REPLACE FUNCTION ${s}.release_children(p_children uuid[], p_now timestamptz, p_channel text)
     RETURNS uuid[] LANGUAGE plpgsql AS $fn$
     DECLARE
       skipped uuid[] := '{}';
       r record;
       x record;
     BEGIN
       -- One child at a time, in id order: every settling transaction locks
       -- children in the same order, so two of them cannot deadlock here.
       FOR r IN
         SELECT c AS id, count(*)::int AS n FROM unnest(p_children) AS c GROUP BY c ORDER BY c
       LOOP
         UPDATE ${s}.job j SET remaining_dependencies = j.remaining_dependencies - r.n
          WHERE j.id = r.id AND j.state = 'waiting'
         RETURNING j.id, j.remaining_dependencies, j.queue INTO x;
         CONTINUE WHEN NOT FOUND OR x.remaining_dependencies > 0;
         IF NOT EXISTS (
           SELECT 1 FROM ${s}.job_dependency d
            WHERE d.child_id = x.id AND NOT (
              d.trigger = 'always'
              OR (d.trigger = 'success' AND d.parent_outcome = 'succeeded')
              OR (d.trigger = 'failure' AND d.parent_outcome = 'failed'))
         ) THEN
           UPDATE ${s}.job SET state = 'queued', run_at = greatest(run_at, p_now) WHERE id = x.id;
           PERFORM pg_notify(p_channel, 'q:' || x.queue);
         ELSE
           UPDATE ${s}.job SET state = 'skipped', completed_at = p_now,
                  last_error = jsonb_build_object('name', 'DependencyNotMet',
                    'message', 'Skipped: a parent did not end the way this job waited for')
            WHERE id = x.id;
           skipped := skipped || x.id;
         END IF;
       END LOOP;
       RETURN skipped;
     END $fn$`,

    // Jobs that just reached a terminal state: count them in their batches,
    // close the dependency edges they are parents of, settle batches that
    // emptied, and repeat for whatever that skipped or cancelled in turn.
    `CREATE OR REPLACE FUNCTION ${s}.settle_jobs(p_ids uuid[], p_states text[], p_now timestamptz, p_channel text)
     RETURNS void LANGUAGE plpgsql AS $fn$
     DECLARE
       q_ids uuid[] := p_ids;
       q_states text[] := p_states;
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
           SELECT j.batch_id,
                  count(*) FILTER (WHERE t.state = 'succeeded')::int AS ok,
                  count(*) FILTER (WHERE t.state = 'failed')::int AS bad,
                  count(*) FILTER (WHERE t.state = 'cancelled')::int AS cxl,
                  count(*) FILTER (WHERE t.state = 'skipped')::int AS skp,
                  count(*)::int AS n
             FROM unnest(q_ids, q_states) AS t(id, state) JOIN ${s}.job j ON j.id = t.id
            WHERE j.batch_id IS NOT NULL
            GROUP BY j.batch_id ORDER BY j.batch_id
         LOOP
           UPDATE ${s}.job_batch jb
              SET pending = jb.pending - c.n, succeeded = jb.succeeded + c.ok, failed = jb.failed + c.bad,
                  cancelled = jb.cancelled + c.cxl, skipped = jb.skipped + c.skp
            WHERE jb.id = c.batch_id
           RETURNING jb.*, c.bad AS new_failures INTO b;
           IF b.new_failures > 0 AND b.failed = b.new_failures THEN
             -- The first failure: catch callbacks run now, not at the end.
             WITH d AS (
               UPDATE ${s}.job_dependency SET parent_outcome = 'failed'
                WHERE parent_batch_id = b.id AND trigger = 'failure' AND parent_outcome IS NULL
               RETURNING child_id
             ) SELECT children || coalesce(array_agg(child_id), '{}') INTO children FROM d;
             IF NOT coalesce((b.options ->> 'allowFailures')::boolean, false) THEN
               WITH c AS (
                 UPDATE ${s}.job SET state = 'cancelled', completed_at = p_now,
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
             UPDATE ${s}.job_batch SET state = final, completed_at = p_now WHERE id = b.id;
             WITH d AS (
               UPDATE ${s}.job_dependency SET parent_outcome = final
                WHERE parent_batch_id = b.id AND parent_outcome IS NULL
               RETURNING child_id
             ) SELECT children || coalesce(array_agg(child_id), '{}') INTO children FROM d;
           END IF;
         END LOOP;

         WITH d AS (
           UPDATE ${s}.job_dependency d SET parent_outcome = t.state
             FROM unnest(q_ids, q_states) AS t(id, state)
            WHERE d.parent_job_id = t.id AND d.parent_outcome IS NULL
           RETURNING d.child_id
         ) SELECT children || coalesce(array_agg(child_id), '{}') INTO children FROM d;

         IF array_length(children, 1) > 0 THEN
           extra := ${s}.release_children(children, p_now, p_channel);
           n_ids := n_ids || extra;
           n_states := n_states || array_fill('skipped'::text, ARRAY[coalesce(array_length(extra, 1), 0)]);
         END IF;
         q_ids := n_ids;
         q_states := n_states;
       END LOOP;
     END $fn$`,

    // retry() of a settled job: undo its count in its batch (reopening it)
    // and bring back every dependent that was skipped because of it, so a
    // chain resumes where it stopped.
    `CREATE OR REPLACE FUNCTION ${s}.reopen_job(p_id uuid, p_previous text)
     RETURNS void LANGUAGE plpgsql AS $fn$
     DECLARE
       v_batch uuid;
       roots uuid[];
     BEGIN
       SELECT batch_id INTO v_batch FROM ${s}.job WHERE id = p_id;
       IF v_batch IS NOT NULL THEN
         UPDATE ${s}.job_batch
            SET pending = pending + 1,
                failed = failed - (p_previous = 'failed')::int,
                cancelled = cancelled - (p_previous = 'cancelled')::int,
                skipped = skipped - (p_previous = 'skipped')::int,
                state = 'executing', completed_at = NULL
          WHERE id = v_batch;
         -- Callbacks that the settled batch skipped wait again; those that ran stay as they are.
         UPDATE ${s}.job_dependency d SET parent_outcome = NULL
           FROM ${s}.job c
          WHERE d.parent_batch_id = v_batch AND c.id = d.child_id AND c.state IN ('skipped', 'waiting');
       END IF;
       UPDATE ${s}.job_dependency SET parent_outcome = NULL WHERE parent_job_id = p_id;
       WITH RECURSIVE gone(id) AS (
         SELECT d.child_id FROM ${s}.job_dependency d JOIN ${s}.job c ON c.id = d.child_id
          WHERE (d.parent_job_id = p_id OR (v_batch IS NOT NULL AND d.parent_batch_id = v_batch)) AND c.state = 'skipped'
         UNION
         SELECT d.child_id FROM gone g JOIN ${s}.job_dependency d ON d.parent_job_id = g.id
           JOIN ${s}.job c ON c.id = d.child_id WHERE c.state = 'skipped'
       ) SELECT coalesce(array_agg(id), '{}') INTO roots FROM gone;
       UPDATE ${s}.job_dependency SET parent_outcome = NULL WHERE parent_job_id = ANY(roots);
       UPDATE ${s}.job j SET state = 'waiting', completed_at = NULL, last_error = NULL,
              remaining_dependencies = (SELECT count(*) FROM ${s}.job_dependency d
                                         WHERE d.child_id = j.id AND d.parent_outcome IS NULL)
        WHERE j.id = ANY(roots);
       -- A dependent that waits on the reopened job again.
       UPDATE ${s}.job j SET remaining_dependencies = (SELECT count(*) FROM ${s}.job_dependency d
                                                        WHERE d.child_id = j.id AND d.parent_outcome IS NULL)
        WHERE j.state = 'waiting' AND j.id IN (SELECT child_id FROM ${s}.job_dependency
                                               WHERE parent_job_id = p_id OR parent_batch_id = v_batch);
     END $fn$`,
  ];
}
