-- Version 3: an index of failed jobs. Operators list failed jobs far more than any other finished
-- ones; without it that list walks the whole history (140 ms over 1M rows, measured). Failures are
-- rare, so the index stays small and success writes never enter it. Released in 0.1.0: frozen.

CREATE INDEX IF NOT EXISTS job_failed_idx ON :SCHEMA.job (id) WHERE state = 'failed';
