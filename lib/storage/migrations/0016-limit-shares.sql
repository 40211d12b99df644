-- Version 16: the workers a queue's concurrency limit keeps waiting, each with the time its wait
-- lapses (claim_controlled): while another worker waits, a claim stops at its share of the limit.
ALTER TABLE :SCHEMA.job_queue ADD COLUMN IF NOT EXISTS waiting_workers text[] NOT NULL DEFAULT '{}';

ALTER TABLE :SCHEMA.job_queue ADD COLUMN IF NOT EXISTS waiting_until timestamptz[] NOT NULL DEFAULT '{}';
