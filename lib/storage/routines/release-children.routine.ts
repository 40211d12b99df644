import { notifySql } from '../sql/notification-topics.js';
import { defineRoutine } from './routine.js';
import { DEPENDENCY_NOT_MET_JSON } from './sql-fragments.js';

/**
 * Counts settled parents off their children (`p_children`, one entry per
 * settled edge) and moves each child whose last parent settled: queued (its
 * queue woken) when its triggers were met (each `success`, `failure` and
 * `always` edge by its own parent; the `any-failure` edges, if any, by one
 * failed parent among them: the model's dependenciesMet), else skipped.
 * Returns the children it skipped, which settle in turn.
 */
export const RELEASE_CHILDREN = defineRoutine(
  'release_children',
  `CREATE FUNCTION :SCHEMA.:ROUTINE(p_children uuid[], p_now timestamptz, p_channel text)
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
         UPDATE :SCHEMA.job j SET remaining_dependencies = j.remaining_dependencies - r.n
          WHERE j.id = r.id AND j.state = 'waiting'
         RETURNING j.id, j.remaining_dependencies, j.queue INTO x;
         CONTINUE WHEN NOT FOUND OR x.remaining_dependencies > 0;
         IF NOT EXISTS (
           SELECT 1 FROM :SCHEMA.job_dependency d
            WHERE d.child_id = x.id AND d.trigger <> 'any-failure' AND NOT (
              d.trigger = 'always'
              OR (d.trigger = 'success' AND d.parent_outcome = 'succeeded')
              OR (d.trigger = 'failure' AND d.parent_outcome = 'failed'))
         ) AND (
           NOT EXISTS (SELECT 1 FROM :SCHEMA.job_dependency d WHERE d.child_id = x.id AND d.trigger = 'any-failure')
           OR EXISTS (SELECT 1 FROM :SCHEMA.job_dependency d
                       WHERE d.child_id = x.id AND d.trigger = 'any-failure' AND d.parent_outcome = 'failed')
         ) THEN
           UPDATE :SCHEMA.job SET state = 'queued', run_at = greatest(run_at, p_now) WHERE id = x.id;
           PERFORM ${notifySql('queue', 'p_channel', 'x.queue')};
         ELSE
           UPDATE :SCHEMA.job SET state = 'skipped', completed_at = p_now, last_error = ${DEPENDENCY_NOT_MET_JSON}
            WHERE id = x.id;
           skipped := skipped || x.id;
         END IF;
       END LOOP;
       RETURN skipped;
     END $fn$`,
);
