-- Version 14: each attempt's claim and handler start times and its span (trace and span ids, with
-- tracing on). A failed, cancelled or snoozed attempt keeps them on its job_execution row; a
-- successful one, which leaves no history row, keeps its handler's start and span on the job row,
-- written by the success write (its claim time is the row's started_at, which the claim writes).
ALTER TABLE :SCHEMA.job_execution
  ADD COLUMN IF NOT EXISTS claimed_at timestamptz,
  ADD COLUMN IF NOT EXISTS trace_id text,
  ADD COLUMN IF NOT EXISTS span_id text;

ALTER TABLE :SCHEMA.job
  ADD COLUMN IF NOT EXISTS handler_started_at timestamptz,
  ADD COLUMN IF NOT EXISTS trace_id text,
  ADD COLUMN IF NOT EXISTS span_id text;
