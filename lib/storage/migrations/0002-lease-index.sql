-- Version 2: the lease index keyed on the lease itself. Its predicate was "state = 'active'",
-- which every outcome statement also says: the planner then walked all active rows through it for
-- each outcome batch (O(active x batch)) instead of finding the jobs by primary key. Keyed on the
-- lease, it serves the rescue ("lease_expires_at < now" implies NOT NULL) and nothing else.
-- Released in 0.1.0: frozen.

DROP INDEX IF EXISTS :SCHEMA.job_lease_idx;

CREATE INDEX IF NOT EXISTS job_lease_expiry_idx ON :SCHEMA.job (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
