-- Version 9: durable steps, and where a job came from.
--
-- Durable steps. One row per finished ctx.step() or ctx.sleep() of a job, written by
-- the attempt that owns the job (the insert reads the job row under the fence); a later attempt
-- reads them back instead of running the step again. A sleep's row carries the time it wakes.
-- The rows go with their job.

CREATE TABLE IF NOT EXISTS :SCHEMA.job_step (
        job_id uuid NOT NULL REFERENCES :SCHEMA.job(id) ON DELETE CASCADE,
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        kind text NOT NULL DEFAULT 'step' CHECK (kind IN ('step', 'sleep')),
        attempt int NOT NULL,
        result jsonb,
        completed_at timestamptz NOT NULL,
        wake_at timestamptz,
        -- The order they were recorded in: completed_at follows the app's clock, which may stand still.
        seq bigint GENERATED ALWAYS AS IDENTITY,
        CHECK ((kind = 'sleep') = (wake_at IS NOT NULL)),
        PRIMARY KEY (job_id, name)
      );

-- Set on a job written with edges to parents (a chain, a flow, enqueue's "after", a batch's
-- then/catch/finally, a continuation): only such a job's claim reads job_dependency for
-- ctx.parentIds and ctx.batchId, so the claim of every other job pays nothing for them.
ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS has_parents boolean NOT NULL DEFAULT false;
