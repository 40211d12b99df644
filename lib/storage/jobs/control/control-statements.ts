import { statement } from '../../sql/named-params.js';
import { CANCELLABLE_STATES, TERMINAL_JOB_STATES } from '../../../model/index.js';
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
    cancel: statement<{ jobId: string; now: Date; channel: string }>()(
      ['jobId', 'now', 'channel'],
      (p) => `WITH u AS (
      UPDATE ${s}.job
         SET cancel_requested = true,
             state = CASE WHEN state = 'active' THEN state ELSE 'cancelled' END,
             completed_at = CASE WHEN state = 'active' THEN completed_at ELSE ${p.now}::timestamptz END
       WHERE id = ${p.jobId} AND state IN (${sqlLiterals(CANCELLABLE_STATES)})
      RETURNING id, state, batch_id, has_dependents
    ), ${settleCte(s, `(SELECT * FROM u WHERE state = 'cancelled')`, `'cancelled'`, p.now, p.channel)}, n AS (
      SELECT ${notifySql('cancel', p.channel, 'u.id::text')} FROM u WHERE state = 'active'
    )
    SELECT id, state FROM u UNION ALL SELECT NULL, NULL FROM settled UNION ALL SELECT NULL, NULL FROM n`,
    ),

    // A retried job that settled a batch or parents reopens them (reopen_job). Its finished steps
    // stay, so the next attempt answers them from storage, unless resetSteps clears them, or
    // fromStep clears the named step and every step recorded after it. "After" is job_step.seq, the
    // order the records were written in (completed_at follows the app's clock, which may stand
    // still). A fromStep the job never recorded writes nothing: `go` is empty, so neither the update,
    // the reopening nor the delete runs, and the job's recorded steps come back for the message.
    // A ctx.patched() answer stays through fromStep: the rerun keeps the path the job took.
    // All in one statement under the job's row lock, so the check and the writes cannot be split.
    retry: statement<{
      jobId: string;
      now: Date;
      channel: string;
      states: readonly string[];
      resetSteps: boolean;
      fromStep: string | null;
      listed: number;
    }>()(
      ['jobId', 'now', 'channel', 'states', 'resetSteps', 'fromStep', 'listed'],
      (p) => `WITH prev AS (
      SELECT id, state, batch_id, has_dependents FROM ${s}.job WHERE id = ${p.jobId} AND state = ANY(${p.states}::text[]) FOR UPDATE
    ), mark AS (
      SELECT st.seq FROM ${s}.job_step st JOIN prev ON st.job_id = prev.id WHERE st.name = ${p.fromStep}::text
    ), go AS (
      SELECT prev.* FROM prev WHERE ${p.fromStep}::text IS NULL OR EXISTS (SELECT 1 FROM mark)
    ), u AS (
      UPDATE ${s}.job j
         SET state = 'queued', max_attempts = j.attempt + j.max_attempts, run_at = ${p.now}, completed_at = NULL,
             worker_id = NULL, cancel_requested = false, result = NULL, progress = NULL, progress_message = NULL,
             failure_hook = NULL, hook_worker_id = NULL, hook_lease_expires_at = NULL,
             hook_attempt = 0, hook_run_at = NULL, hook_error = NULL
        FROM go WHERE j.id = go.id RETURNING j.id, j.queue
    ), r AS (
      SELECT ${s}.${ROUTINE_NAMES.reopenJob}(go.id, go.state) FROM go WHERE go.batch_id IS NOT NULL OR go.has_dependents
    ), forget AS (
      DELETE FROM ${s}.job_step st USING u
       WHERE st.job_id = u.id
         AND (${p.resetSteps}::boolean OR (st.seq >= (SELECT seq FROM mark) AND st.name NOT LIKE 'patch:%'))
    )
    SELECT id, ${notifySql('queue', p.channel, 'queue')}, NULL::text[] AS recorded, NULL::int AS recorded_count FROM u
    UNION ALL SELECT NULL, NULL, NULL, NULL FROM r
    UNION ALL SELECT NULL, NULL,
           ARRAY(SELECT name FROM ${s}.job_step WHERE job_id = prev.id ORDER BY seq LIMIT ${p.listed}),
           (SELECT count(*)::int FROM ${s}.job_step WHERE job_id = prev.id)
      FROM prev WHERE NOT EXISTS (SELECT 1 FROM go)`,
    ),

    stateOf: statement<{ jobId: string }>()(['jobId'], (p) => `SELECT state FROM ${s}.job WHERE id = ${p.jobId}`),

    // The children of ctx.invoke() a cancelled parent leaves, not ended yet: they are cancelled with it.
    openChildren: statement<{ parentId: string }>()(
      ['parentId'],
      (p) =>
        `SELECT id FROM ${s}.job WHERE invoked_by = ${p.parentId} AND state NOT IN (${sqlLiterals(TERMINAL_JOB_STATES)})`,
    ),

    // Under the row lock, so the state returned is the latest: if the job ends after it, the end's
    // row version carries the flag and its trigger announces it. Already flagged: nothing to write.
    markAwaited: statement<{ jobId: string }>()(
      ['jobId'],
      (p) => `UPDATE ${s}.job SET awaited = true WHERE id = ${p.jobId} AND NOT awaited RETURNING state`,
    ),

    // The waiters' re-check, one statement for every job waited on in this process.
    statesOf: statement<{ ids: readonly string[] }>()(
      ['ids'],
      (p) => `SELECT id, state FROM ${s}.job WHERE id = ANY(${p.ids}::uuid[])`,
    ),

    getJob: statement<{ jobId: string }>()(['jobId'], (p) => `SELECT * FROM ${s}.job WHERE id = ${p.jobId}`),

    // What a history page needs of the job row: the attempt it tells of (see executionPageFromRows).
    jobAttempt: statement<{ jobId: string }>()(
      ['jobId'],
      (p) => `SELECT state, attempt, worker_id, started_at, completed_at FROM ${s}.job WHERE id = ${p.jobId}`,
    ),

    // Newest first through job_execution_job_idx (job_id, attempt), read backwards; `limit` rows at most.
    latestExecutions: statement<{ jobId: string; limit: number }>()(
      ['jobId', 'limit'],
      (p) =>
        `SELECT * FROM ${s}.job_execution WHERE job_id = ${p.jobId} ORDER BY attempt DESC, id DESC LIMIT ${p.limit}`,
    ),

    // The rows older than a cursor (`attempt`, `rowId`), newest first.
    executionsBefore: statement<{ jobId: string; attempt: number; rowId: string; limit: number }>()(
      ['jobId', 'attempt', 'rowId', 'limit'],
      (p) => `SELECT * FROM ${s}.job_execution
       WHERE job_id = ${p.jobId} AND attempt <= ${p.attempt} AND (attempt, id) < (${p.attempt}, ${p.rowId}::bigint)
       ORDER BY attempt DESC, id DESC LIMIT ${p.limit}`,
    ),
  };
}

export type ControlStatements = ReturnType<typeof controlStatements>;
