-- Version 20: a job's context (ctx.context), a small JSON object stored beside its payload: given at
-- enqueue or read from JobsModule's contextFrom, and copied to the jobs the job starts. Sealed like
-- the payload for an encrypted job. Null for a job without one.
ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS context jsonb;
