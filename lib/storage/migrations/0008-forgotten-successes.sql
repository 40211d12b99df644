-- Version 8: successes of job types that keep none (keep.succeeded: false, retention.succeeded: 0)
-- are deleted in their outcome's write; the throughput they made is counted here, per minute and
-- queue, so the dashboard's throughput stays right. One row per writing backend, so that workers
-- counting the same minute never wait on each other's row. Retention prunes what no throughput
-- window reads any more.
CREATE TABLE IF NOT EXISTS :SCHEMA.job_forgotten (
  minute timestamptz NOT NULL,
  queue text NOT NULL,
  backend int NOT NULL,
  succeeded int NOT NULL,
  PRIMARY KEY (minute, queue, backend)
);
