-- Version 17: a job of a limited queue claimed ahead for a worker, to start in the place of one of
-- its running jobs of the queue that succeeds (claim_controlled's p_ahead). The queue's limit does not
-- count it until the success of the job it replaces is written.
ALTER TABLE :SCHEMA.job ADD COLUMN IF NOT EXISTS reserved boolean NOT NULL DEFAULT false;
