-- Undoes version 2 (TypeORM migrations' down). Frozen with it.

DROP INDEX IF EXISTS :SCHEMA.job_lease_expiry_idx;

CREATE INDEX IF NOT EXISTS job_lease_idx ON :SCHEMA.job (lease_expires_at) WHERE state = 'active';
