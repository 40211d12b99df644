/**
 * The schema, as ordered, append-only versions. A version once released is
 * never edited: a change is a new version, so every instance and every app
 * that runs these through its own TypeORM migrations ends at the same shape.
 */
import { quoteIdent } from './sql-identifiers.js';
import { workflowFunctions } from './workflow-functions.js';

export interface SchemaMigration {
  version: number;
  name: string;
  up(schema: string): string[];
  down(schema: string): string[];
}

export { quoteIdent };

const v1: SchemaMigration = {
  version: 1,
  name: 'initial',
  up: (schema) => {
    const s = quoteIdent(schema);
    return [
      `CREATE TABLE IF NOT EXISTS ${s}.job_batch (
        id uuid PRIMARY KEY,
        name text,
        state text NOT NULL DEFAULT 'executing'
          CHECK (state IN ('executing','succeeded','failed','cancelled')),
        total int NOT NULL DEFAULT 0,
        pending int NOT NULL DEFAULT 0,
        succeeded int NOT NULL DEFAULT 0,
        failed int NOT NULL DEFAULT 0,
        cancelled int NOT NULL DEFAULT 0,
        skipped int NOT NULL DEFAULT 0,
        options jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL,
        started_at timestamptz,
        completed_at timestamptz
      )`,
      `CREATE TABLE IF NOT EXISTS ${s}.job (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        queue text NOT NULL DEFAULT 'default',
        payload jsonb,
        state text NOT NULL
          CHECK (state IN ('waiting','queued','active','succeeded','failed','cancelled','skipped')),
        priority int NOT NULL DEFAULT 0,
        run_at timestamptz NOT NULL,
        attempt int NOT NULL DEFAULT 0,
        max_attempts int NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
        timeout_ms int,
        lease_expires_at timestamptz,
        worker_id text,
        last_error jsonb,
        result jsonb,
        progress real,
        progress_message text,
        created_at timestamptz NOT NULL,
        started_at timestamptz,
        completed_at timestamptz,
        batch_id uuid REFERENCES ${s}.job_batch(id) ON DELETE CASCADE,
        group_key text,
        unique_key text,
        remaining_dependencies int NOT NULL DEFAULT 0,
        -- Set when a job becomes a parent, so settling plain jobs skips the workflow step.
        has_dependents boolean NOT NULL DEFAULT false,
        cancel_requested boolean NOT NULL DEFAULT false,
        trace_context jsonb
      )`,
      // The claim reads only eligible rows, in claim order: a partial index
      // keeps its size proportional to the backlog, not to the history.
      `CREATE INDEX IF NOT EXISTS job_claim_idx ON ${s}.job (queue, priority DESC, run_at, id) WHERE state = 'queued'`,
      `CREATE INDEX IF NOT EXISTS job_lease_idx ON ${s}.job (lease_expires_at) WHERE state = 'active'`,
      // Jobs waiting on parents: counted and listed without a table scan; plain jobs never enter it.
      `CREATE INDEX IF NOT EXISTS job_waiting_idx ON ${s}.job (id) WHERE state = 'waiting'`,
      `CREATE INDEX IF NOT EXISTS job_batch_idx ON ${s}.job (batch_id) WHERE batch_id IS NOT NULL`,
      `CREATE UNIQUE INDEX IF NOT EXISTS job_unique_key_idx ON ${s}.job (unique_key)
         WHERE unique_key IS NOT NULL AND state IN ('waiting','queued','active')`,
      `CREATE TABLE IF NOT EXISTS ${s}.job_execution (
        id bigserial PRIMARY KEY,
        job_id uuid NOT NULL REFERENCES ${s}.job(id) ON DELETE CASCADE,
        attempt int NOT NULL,
        worker_id text,
        state text NOT NULL CHECK (state IN ('active','succeeded','failed','interrupted','cancelled')),
        started_at timestamptz,
        ended_at timestamptz,
        error jsonb
      )`,
      `CREATE INDEX IF NOT EXISTS job_execution_job_idx ON ${s}.job_execution (job_id, attempt)`,
      `CREATE TABLE IF NOT EXISTS ${s}.job_dependency (
        child_id uuid NOT NULL REFERENCES ${s}.job(id) ON DELETE CASCADE,
        parent_job_id uuid REFERENCES ${s}.job(id) ON DELETE CASCADE,
        parent_batch_id uuid REFERENCES ${s}.job_batch(id) ON DELETE CASCADE,
        trigger text NOT NULL DEFAULT 'success' CHECK (trigger IN ('success','failure','always')),
        parent_outcome text,
        CHECK ((parent_job_id IS NULL) <> (parent_batch_id IS NULL))
      )`,
      `CREATE INDEX IF NOT EXISTS job_dependency_child_idx ON ${s}.job_dependency (child_id)`,
      `CREATE INDEX IF NOT EXISTS job_dependency_parent_job_idx ON ${s}.job_dependency (parent_job_id) WHERE parent_job_id IS NOT NULL`,
      `CREATE INDEX IF NOT EXISTS job_dependency_parent_batch_idx ON ${s}.job_dependency (parent_batch_id) WHERE parent_batch_id IS NOT NULL`,
      `CREATE TABLE IF NOT EXISTS ${s}.recurring_schedule (
        name text PRIMARY KEY,
        job_name text NOT NULL,
        cron text NOT NULL,
        time_zone text NOT NULL DEFAULT 'UTC',
        payload jsonb,
        source text NOT NULL CHECK (source IN ('code','dynamic')),
        options jsonb NOT NULL DEFAULT '{}'::jsonb,
        catch_up text NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest','all','none')),
        overlap text NOT NULL DEFAULT 'allow' CHECK (overlap IN ('allow','skip')),
        paused boolean NOT NULL DEFAULT false,
        next_run_at timestamptz,
        last_run_at timestamptz,
        last_job_id uuid,
        skipped_count int NOT NULL DEFAULT 0,
        last_skipped_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`,
      // Every instance asks "what is due?" on each wake-up.
      `CREATE INDEX IF NOT EXISTS recurring_schedule_due_idx ON ${s}.recurring_schedule (next_run_at) WHERE NOT paused`,
      `CREATE TABLE IF NOT EXISTS ${s}.worker (
        id text PRIMARY KEY,
        host text NOT NULL,
        pid int NOT NULL,
        queues text[] NOT NULL DEFAULT '{}',
        concurrency int NOT NULL,
        started_at timestamptz NOT NULL,
        last_heartbeat timestamptz NOT NULL,
        active int NOT NULL DEFAULT 0,
        stopped_at timestamptz
      )`,
      ...workflowFunctions(schema),
    ];
  },
  down: (schema) => {
    const s = quoteIdent(schema);
    const functions = [
      'settle_jobs(uuid[], text[], timestamptz, text)',
      'release_children(uuid[], timestamptz, text)',
      'reopen_job(uuid, text)',
    ];
    return [
      ...functions.map((f) => `DROP FUNCTION IF EXISTS ${s}.${f}`),
      ...['worker', 'recurring_schedule', 'job_dependency', 'job_execution', 'job', 'job_batch'].map(
        (t) => `DROP TABLE IF EXISTS ${s}.${t}`,
      ),
    ];
  },
};

// The lease index's predicate was "state = 'active'", which every outcome
// statement also says: the planner then walked all active rows through that
// index for each outcome batch (O(active x batch)) instead of looking the
// finished jobs up by primary key. Keyed on the lease itself, it serves the
// rescue ("lease_expires_at < now" implies NOT NULL) and nothing else.
const v2: SchemaMigration = {
  version: 2,
  name: 'lease-index',
  up: (schema) => {
    const s = quoteIdent(schema);
    return [
      `DROP INDEX IF EXISTS ${s}.job_lease_idx`,
      `CREATE INDEX IF NOT EXISTS job_lease_expiry_idx ON ${s}.job (lease_expires_at) WHERE lease_expires_at IS NOT NULL`,
    ];
  },
  down: (schema) => {
    const s = quoteIdent(schema);
    return [
      `DROP INDEX IF EXISTS ${s}.job_lease_expiry_idx`,
      `CREATE INDEX IF NOT EXISTS job_lease_idx ON ${s}.job (lease_expires_at) WHERE state = 'active'`,
    ];
  },
};

// Operators list failed jobs far more than any other finished ones; without
// an index that list walks the whole history (140 ms over 1M rows, measured).
// Failures are rare, so the index stays small and success writes never enter it.
const v3: SchemaMigration = {
  version: 3,
  name: 'failed-index',
  up: (schema) => [
    `CREATE INDEX IF NOT EXISTS job_failed_idx ON ${quoteIdent(schema)}.job (id) WHERE state = 'failed'`,
  ],
  down: (schema) => [`DROP INDEX IF EXISTS ${quoteIdent(schema)}.job_failed_idx`],
};

export const SCHEMA_MIGRATIONS: readonly SchemaMigration[] = [v1, v2, v3];
