-- Version 19: services own what their code declares, and instances say which job types they handle.
--
-- A service (JobsModule's `service`) owns the code-declared schedules and limits it wrote (the
-- `service` / `code_service` columns); a start writes and removes only its own. A build of a
-- service is the fingerprint of what it declares: `service_build` records when each was first
-- seen, `service_instance` which build each running app instance is (its heartbeat), and
-- `service_owner` which build's declarations are in force. A newer build takes over; an older
-- one takes over only once no instance of the build in force is alive.
--
-- Workers record the job names they handle, so jobs that no live worker handles can be reported.
ALTER TABLE :SCHEMA.recurring_schedule
  ADD COLUMN IF NOT EXISTS service text,
  ADD COLUMN IF NOT EXISTS definition_hash text;
ALTER TABLE :SCHEMA.job_queue ADD COLUMN IF NOT EXISTS code_service text;
ALTER TABLE :SCHEMA.job_name_limit ADD COLUMN IF NOT EXISTS code_service text;
ALTER TABLE :SCHEMA.job_rate_limit ADD COLUMN IF NOT EXISTS code_service text;

ALTER TABLE :SCHEMA.worker
  ADD COLUMN IF NOT EXISTS service text,
  ADD COLUMN IF NOT EXISTS job_names text[];

CREATE TABLE IF NOT EXISTS :SCHEMA.service_build (
        service text NOT NULL,
        build text NOT NULL,
        first_seen_at timestamptz NOT NULL,
        PRIMARY KEY (service, build)
      );

CREATE TABLE IF NOT EXISTS :SCHEMA.service_owner (
        service text PRIMARY KEY,
        build text NOT NULL,
        since timestamptz NOT NULL
      );

CREATE TABLE IF NOT EXISTS :SCHEMA.service_instance (
        id text PRIMARY KEY,
        service text NOT NULL,
        build text NOT NULL,
        started_at timestamptz NOT NULL,
        last_seen_at timestamptz NOT NULL,
        stopped_at timestamptz
      );

CREATE INDEX IF NOT EXISTS service_instance_build_idx ON :SCHEMA.service_instance (service, build);
