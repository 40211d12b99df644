import { CANCELLABLE_STATES } from '../../../model/index.js';
import { quoteIdent, sqlLiterals } from '../../sql/sql-identifiers.js';
import { notifySql } from '../../sql/notification-topics.js';
import { settleCte } from '../job-fragments.js';
import { ROUTINE_NAMES } from '../../routines/routine-catalog.js';

/** The SQL of reading, cancelling and retrying one job by id, for one schema, built once. */
export function controlStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    // One statement whatever the job's state: a job not started yet is cancelled now (its batch and
    // dependents settle), a running one is flagged and its worker told. Under the row lock the state
    // is the latest, so a job moving between queued and active cannot slip between two statements.
    // The flag stays on the row: a rescue or a hand-back of that attempt ends the job cancelled.
    cancel: `WITH u AS (
      UPDATE ${s}.job
         SET cancel_requested = true,
             state = CASE WHEN state = 'active' THEN state ELSE 'cancelled' END,
             completed_at = CASE WHEN state = 'active' THEN completed_at ELSE $2::timestamptz END
       WHERE id = $1 AND state IN (${sqlLiterals(CANCELLABLE_STATES)})
      RETURNING id, state, batch_id, has_dependents
    ), ${settleCte(s, `(SELECT * FROM u WHERE state = 'cancelled')`, `'cancelled'`, '$2', '$3')}, n AS (
      SELECT ${notifySql('cancel', '$3', 'u.id::text')} FROM u WHERE state = 'active'
    )
    SELECT id, state FROM u UNION ALL SELECT NULL, NULL FROM settled UNION ALL SELECT NULL, NULL FROM n`,

    // A retried job that settled a batch or parents reopens them (reopen_job). Its finished steps
    // stay, so the next attempt answers them from storage, unless $5 (resetSteps) clears them.
    retry: `WITH prev AS (
      SELECT id, state, batch_id, has_dependents FROM ${s}.job WHERE id = $1 AND state = ANY($4::text[]) FOR UPDATE
    ), u AS (
      UPDATE ${s}.job j
         SET state = 'queued', max_attempts = j.attempt + j.max_attempts, run_at = $2, completed_at = NULL,
             worker_id = NULL, cancel_requested = false, result = NULL, progress = NULL, progress_message = NULL,
             failure_hook = NULL, hook_worker_id = NULL, hook_lease_expires_at = NULL,
             hook_attempt = 0, hook_run_at = NULL, hook_error = NULL
        FROM prev WHERE j.id = prev.id RETURNING j.id, j.queue
    ), r AS (
      SELECT ${s}.${ROUTINE_NAMES.reopenJob}(prev.id, prev.state) FROM prev WHERE prev.batch_id IS NOT NULL OR prev.has_dependents
    ), forget AS (
      DELETE FROM ${s}.job_step st USING u WHERE $5::boolean AND st.job_id = u.id
    )
    SELECT id, ${notifySql('queue', '$3', 'queue')} FROM u UNION ALL SELECT NULL, NULL FROM r`,

    stateOf: `SELECT state FROM ${s}.job WHERE id = $1`,

    getJob: `SELECT * FROM ${s}.job WHERE id = $1`,

    // What a history page needs of the job row: the attempt it tells of (see executionPageFromRows).
    jobAttempt: `SELECT state, attempt, worker_id, started_at, completed_at FROM ${s}.job WHERE id = $1`,

    // Newest first through job_execution_job_idx (job_id, attempt), read backwards; $2 rows at most.
    latestExecutions: `SELECT * FROM ${s}.job_execution WHERE job_id = $1 ORDER BY attempt DESC, id DESC LIMIT $2`,

    // The rows older than a cursor ($2 attempt, $3 row id), newest first.
    executionsBefore: `SELECT * FROM ${s}.job_execution
       WHERE job_id = $1 AND attempt <= $2 AND (attempt, id) < ($2, $3::bigint)
       ORDER BY attempt DESC, id DESC LIMIT $4`,
  };
}

export type ControlStatements = ReturnType<typeof controlStatements>;
