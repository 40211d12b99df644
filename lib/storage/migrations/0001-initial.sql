-- Version 1: the job tables, their indexes, and the functions that settle batches and
-- dependencies inside the statement that records an outcome. Released in 0.1.0: frozen.

CREATE TABLE IF NOT EXISTS :SCHEMA.job_batch (
        id uuid PRIMARY KEY,
        name text,
        state text NOT NULL DEFAULT 'executing'
          CHECK (state IN ('executing','succeeded','failed','cancelled')),
        total int NOT NULL DEFAULT 0,
        pending int NOT NULL DEFAULT 0,
        succeeded int NOT NULL DEFAULT 0,
        failed int NOT NULL DEFAULT 0,
        cancelled int NOT NULL DEFAULT 0,
        skipped int NOT NULL DEFAULT 0,
        options jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL,
        started_at timestamptz,
        completed_at timestamptz
      );

CREATE TABLE IF NOT EXISTS :SCHEMA.job (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        queue text NOT NULL DEFAULT 'default',
        payload jsonb,
        state text NOT NULL
          CHECK (state IN ('waiting','queued','active','succeeded','failed','cancelled','skipped')),
        priority int NOT NULL DEFAULT 0,
        run_at timestamptz NOT NULL,
        attempt int NOT NULL DEFAULT 0,
        max_attempts int NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
        timeout_ms int,
        lease_expires_at timestamptz,
        worker_id text,
        last_error jsonb,
        result jsonb,
        progress real,
        progress_message text,
        created_at timestamptz NOT NULL,
        started_at timestamptz,
        completed_at timestamptz,
        batch_id uuid REFERENCES :SCHEMA.job_batch(id) ON DELETE CASCADE,
        group_key text,
        unique_key text,
        remaining_dependencies int NOT NULL DEFAULT 0,
        -- Set when a job becomes a parent, so settling plain jobs skips the workflow step.
        has_dependents boolean NOT NULL DEFAULT false,
        cancel_requested boolean NOT NULL DEFAULT false,
        trace_context jsonb
      );

CREATE INDEX IF NOT EXISTS job_claim_idx ON :SCHEMA.job (queue, priority DESC, run_at, id) WHERE state = 'queued';

CREATE INDEX IF NOT EXISTS job_lease_idx ON :SCHEMA.job (lease_expires_at) WHERE state = 'active';

CREATE INDEX IF NOT EXISTS job_waiting_idx ON :SCHEMA.job (id) WHERE state = 'waiting';

CREATE INDEX IF NOT EXISTS job_batch_idx ON :SCHEMA.job (batch_id) WHERE batch_id IS NOT NULL;

CREATE UNIQUE INDEX IF NOT EXISTS job_unique_key_idx ON :SCHEMA.job (unique_key)
         WHERE unique_key IS NOT NULL AND state IN ('waiting','queued','active');

CREATE TABLE IF NOT EXISTS :SCHEMA.job_execution (
        id bigserial PRIMARY KEY,
        job_id uuid NOT NULL REFERENCES :SCHEMA.job(id) ON DELETE CASCADE,
        attempt int NOT NULL,
        worker_id text,
        state text NOT NULL CHECK (state IN ('active','succeeded','failed','interrupted','cancelled')),
        started_at timestamptz,
        ended_at timestamptz,
        error jsonb
      );

CREATE INDEX IF NOT EXISTS job_execution_job_idx ON :SCHEMA.job_execution (job_id, attempt);

CREATE TABLE IF NOT EXISTS :SCHEMA.job_dependency (
        child_id uuid NOT NULL REFERENCES :SCHEMA.job(id) ON DELETE CASCADE,
        parent_job_id uuid REFERENCES :SCHEMA.job(id) ON DELETE CASCADE,
        parent_batch_id uuid REFERENCES :SCHEMA.job_batch(id) ON DELETE CASCADE,
        trigger text NOT NULL DEFAULT 'success' CHECK (trigger IN ('success','failure','always')),
        parent_outcome text,
        CHECK ((parent_job_id IS NULL) <> (parent_batch_id IS NULL))
      );

CREATE INDEX IF NOT EXISTS job_dependency_child_idx ON :SCHEMA.job_dependency (child_id);

CREATE INDEX IF NOT EXISTS job_dependency_parent_job_idx ON :SCHEMA.job_dependency (parent_job_id) WHERE parent_job_id IS NOT NULL;

CREATE INDEX IF NOT EXISTS job_dependency_parent_batch_idx ON :SCHEMA.job_dependency (parent_batch_id) WHERE parent_batch_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS :SCHEMA.recurring_schedule (
        name text PRIMARY KEY,
        job_name text NOT NULL,
        cron text NOT NULL,
        time_zone text NOT NULL DEFAULT 'UTC',
        payload jsonb,
        source text NOT NULL CHECK (source IN ('code','dynamic')),
        options jsonb NOT NULL DEFAULT '{}'::jsonb,
        catch_up text NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest','all','none')),
        overlap text NOT NULL DEFAULT 'allow' CHECK (overlap IN ('allow','skip')),
        paused boolean NOT NULL DEFAULT false,
        next_run_at timestamptz,
        last_run_at timestamptz,
        last_job_id uuid,
        skipped_count int NOT NULL DEFAULT 0,
        last_skipped_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );

CREATE INDEX IF NOT EXISTS recurring_schedule_due_idx ON :SCHEMA.recurring_schedule (next_run_at) WHERE NOT paused;

CREATE TABLE IF NOT EXISTS :SCHEMA.worker (
        id text PRIMARY KEY,
        host text NOT NULL,
        pid int NOT NULL,
        queues text[] NOT NULL DEFAULT '{}',
        concurrency int NOT NULL,
        started_at timestamptz NOT NULL,
        last_heartbeat timestamptz NOT NULL,
        active int NOT NULL DEFAULT 0,
        stopped_at timestamptz
      );

CREATE OR REPLACE FUNCTION :SCHEMA.release_children(p_children uuid[], p_now timestamptz, p_channel text)
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
            WHERE d.child_id = x.id AND NOT (
              d.trigger = 'always'
              OR (d.trigger = 'success' AND d.parent_outcome = 'succeeded')
              OR (d.trigger = 'failure' AND d.parent_outcome = 'failed'))
         ) THEN
           UPDATE :SCHEMA.job SET state = 'queued', run_at = greatest(run_at, p_now) WHERE id = x.id;
           PERFORM pg_notify(p_channel, 'q:' || x.queue);
         ELSE
           UPDATE :SCHEMA.job SET state = 'skipped', completed_at = p_now,
                  last_error = jsonb_build_object('name', 'DependencyNotMet',
                    'message', 'Skipped: a parent did not end the way this job waited for')
            WHERE id = x.id;
           skipped := skipped || x.id;
         END IF;
       END LOOP;
       RETURN skipped;
     END $fn$;

CREATE OR REPLACE FUNCTION :SCHEMA.settle_jobs(p_ids uuid[], p_states text[], p_now timestamptz, p_channel text)
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
             FROM unnest(q_ids, q_states) AS t(id, state) JOIN :SCHEMA.job j ON j.id = t.id
            WHERE j.batch_id IS NOT NULL
            GROUP BY j.batch_id ORDER BY j.batch_id
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
                WHERE parent_batch_id = b.id AND trigger = 'failure' AND parent_outcome IS NULL
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
           extra := :SCHEMA.release_children(children, p_now, p_channel);
           n_ids := n_ids || extra;
           n_states := n_states || array_fill('skipped'::text, ARRAY[coalesce(array_length(extra, 1), 0)]);
         END IF;
         q_ids := n_ids;
         q_states := n_states;
       END LOOP;
     END $fn$;

CREATE OR REPLACE FUNCTION :SCHEMA.reopen_job(p_id uuid, p_previous text)
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
     END $fn$;
