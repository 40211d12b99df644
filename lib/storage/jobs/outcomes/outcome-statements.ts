import { JobCancelledError } from '../../../model/index.js';
import { quoteIdent } from '../../sql/sql-identifiers.js';
import { notifySql } from '../../sql/notification-topics.js';
import { lineageJoin, LINEAGE_COLUMNS, settleCte } from '../job-fragments.js';
import { ROUTINE_NAMES } from '../../routines/routine-catalog.js';
import { outcomeFence } from '../../routines/sql-fragments.js';

/**
 * The SQL of what a worker writes about the jobs it holds, for one schema,
 * built once. The success writes run as prepared statements; the rarer
 * ones stay unnamed, each planned for its actual batch (~0.2 ms to plan).
 *
 * Outcome and lease statements find their rows with "id = ANY($1)" and read
 * each row's own values (attempt, result, error) from a JSON object keyed by
 * id, instead of joining an unnest() of the values. The fence ("held by this
 * worker, still active") matches almost no row of the table by the planner's
 * statistics, so in a join it put the job table first, scanned it, and
 * compared every active row with every value row: 50 ms for 500 outcomes on a
 * 20k-row table, measured. Without a join the worst plan is one linear scan.
 */
/** The error of a job whose accepted cancel a hand-back carries out. */
const CANCELLED = JobCancelledError.name;

export function outcomeStatements(schema: string) {
  const s = quoteIdent(schema);
  /** This row's entry in the fail statement's JSON object ($5), and one field of it as text. */
  const failure = `($5::jsonb -> (j.id::text))`;
  const failed = (field: string) => `(${failure} ->> '${field}')`;
  /** One part of this row's `trace/span/handler start` in the traced renewal's JSON object ($6). */
  const held = (n: number) => `split_part($6::jsonb ->> (j.id::text), '/', ${n})`;
  /** The fail statement's next state of row j: the attempt's, unless a retry or snooze meets an accepted cancel. */
  const next = `(CASE WHEN j.cancel_requested AND ${failed('state')} = 'queued' THEN 'cancelled' ELSE ${failed('state')} END)`;
  /**
   * The success write ($1 ids, $2 worker, $3 now, $5 attempts, $6 results, `traces` each traced
   * attempt's `trace/span/handler start in epoch ms`, or null when the batch had none), fenced like
   * every outcome. A success leaves no history row: a traced one's span and handler start stay on the
   * job row, in this same write; its claim time is the row's started_at.
   */
  const succeeded = (traces: string) => {
    const part = (n: number) =>
      `CASE WHEN ${traces}::jsonb IS NULL THEN NULL ELSE nullif(split_part(${traces}::jsonb ->> (j.id::text), '/', ${n}), '') END`;
    return `UPDATE ${s}.job j
         SET state = 'succeeded', completed_at = $3, result = $6::jsonb -> (j.id::text), lease_expires_at = NULL,
             progress = CASE WHEN j.progress IS NULL THEN NULL ELSE 1 END,
             handler_started_at = to_timestamp(${part(3)}::float8 / 1000), trace_id = ${part(1)}, span_id = ${part(2)}
       WHERE ${outcomeFence('j', '$1', '$2', '($5::jsonb ->> (j.id::text))::int')}
      RETURNING j.id, j.batch_id, j.has_dependents`;
  };
  /**
   * The jobs claimed ahead that started in the place of the successes written (`successors`, a
   * JSON object from a success's id to its successor's): counted by their queue's limit from this
   * write on. Only where the success was written: a success the fence refused frees no slot.
   */
  const promoted = (successors: string) => `promoted AS (
      UPDATE ${s}.job p SET reserved = false
       WHERE p.id = ANY(ARRAY(SELECT (${successors}::jsonb ->> u.id::text)::uuid FROM u))
         AND p.worker_id = $2 AND p.state = 'active' AND p.reserved
      RETURNING p.id
    )`;
  return {
    succeed: `WITH u AS (
      ${succeeded('$7')}
    ), ${settleCte(s, 'u', `'succeeded'`, '$3', '$4')}
    SELECT id FROM u UNION ALL SELECT NULL FROM settled`,

    // succeed, where some of the successes had a job claimed ahead start in their place ($8).
    succeedWithSuccessors: `WITH u AS (
      ${succeeded('$7')}
    ), ${settleCte(s, 'u', `'succeeded'`, '$3', '$4')}, ${promoted('$8')}
    SELECT id FROM u UNION ALL SELECT NULL FROM settled`,

    // succeed, and a claim of a limited queue ($7..$10, $12) in the same statement: the slots these
    // outcomes free are refilled without a second round trip. The claim's argument reads u and
    // settled, so both are written before claim_controlled runs; as a volatile function its
    // statements see them (the freed slots count as free) and take the queue's lock after this
    // statement's row locks, the order every outcome write keeps. Rows: done = true for an
    // applied outcome (id only), false for a claimed job or the rate limit's wait row.
    succeedAndClaim: `WITH u AS (
      ${succeeded('$11')}
    ), ${settleCte(s, 'u', `'succeeded'`, '$3', '$4')}, ${promoted('$14')}, written AS (
      SELECT (SELECT count(*) FROM u) + (SELECT count(*) FROM settled) + (SELECT count(*) FROM promoted) AS n
    )
    SELECT true AS done, id, NULL::text AS name, NULL::text AS queue, NULL::jsonb AS payload, NULL::int AS attempt,
           NULL::int AS "maxAttempts", NULL::int AS "timeoutMs", NULL::uuid AS "batchId", NULL::jsonb AS "traceContext",
           NULL::timestamptz AS deadline, NULL::timestamptz AS "runAt", NULL::float8 AS "waitMs", NULL::boolean AS reserved, NULL::uuid[] AS "parentIds",
           NULL::uuid AS "parentBatchId", NULL::jsonb AS context
      FROM u
    UNION ALL
    SELECT false, c.id, c.name, c.queue, c.payload, c.attempt, c.max_attempts, c.timeout_ms, c.batch_id, c.trace_context,
           c.deadline, c.run_at, c.wait_ms, c.reserved, p.parent_ids, p.parent_batch_id, c.context
      FROM written CROSS JOIN LATERAL ${s}.${ROUTINE_NAMES.claimControlled}($7, $8::text[], $9 + 0 * written.n::int, $3, $2, $10, $4, $12, $13) c
      ${lineageJoin(s, 'c')}`,

    // A failed attempt leaves a history row; the job row moves on in the same statement. One that
    // would go back to the queue (a retry, a snooze) while its cancel was accepted ends cancelled:
    // the cancel arrived as the attempt was ending, and the worker had not acted on it.
    fail: `WITH u AS (
      UPDATE ${s}.job j
         SET state = ${next}, run_at = coalesce((${failed('run_at')})::timestamptz, j.run_at),
             max_attempts = j.max_attempts + CASE WHEN (${failed('extra')})::boolean THEN 1 ELSE 0 END,
             last_error = CASE WHEN ${next} = 'cancelled' AND ${failed('state')} = 'queued' THEN jsonb_build_object(
               'name', '${CANCELLED}',
               'message', format('Job %s was cancelled as its attempt %s ended (%s); it is not run again',
                                 j.id, j.attempt, ${failure} -> 'error' ->> 'message'))
             ELSE ${failure} -> 'error' END,
             lease_expires_at = NULL,
             worker_id = CASE WHEN ${next} = 'queued' THEN NULL ELSE j.worker_id END,
             completed_at = CASE WHEN ${next} = 'queued' THEN NULL ELSE $3::timestamptz END,
             failure_hook = CASE WHEN ${failed('state')} = 'failed' THEN ${failed('hook')} END,
             hook_worker_id = CASE WHEN ${failed('hook')} = 'running' THEN $2 END,
             hook_lease_expires_at = CASE WHEN ${failed('hook')} = 'running'
                                          THEN $3::timestamptz + make_interval(secs => $6::float8 / 1000) END,
             hook_attempt = CASE WHEN ${failed('hook')} = 'running' THEN 1 ELSE 0 END,
             hook_run_at = NULL, hook_error = NULL,
             -- A traced renewal's span of this attempt: the next attempt's rescue must not record it.
             trace_id = NULL, span_id = NULL, handler_started_at = NULL
       WHERE ${outcomeFence('j', '$1', '$2', `(${failed('attempt')})::int`)}
      RETURNING j.id, j.attempt, j.started_at, ${failed('exec_state')} AS exec_state,
                ${failure} -> 'error' AS error, ${failure} -> 'run' AS run, j.state, j.batch_id, j.has_dependents
    ), ex AS (
      INSERT INTO ${s}.job_execution (job_id, attempt, worker_id, state, claimed_at, started_at, ended_at, error, trace_id, span_id)
      SELECT id, attempt, $2, exec_state, (run ->> 'claimed')::timestamptz, coalesce((run ->> 'started')::timestamptz, started_at),
             $3, error, run ->> 'trace', run ->> 'span'
        FROM u
    ), ${settleCte(s, `(SELECT * FROM u WHERE state <> 'queued')`, 'state', '$3', '$4')}
    SELECT id FROM u UNION ALL SELECT NULL FROM settled`,

    renew: `UPDATE ${s}.job j
       SET lease_expires_at = $3::timestamptz + make_interval(secs => $4::float8 / 1000)
     WHERE ${outcomeFence('j', '$1', '$2', '($5::jsonb ->> (j.id::text))::int')}
    RETURNING j.id, j.cancel_requested`,

    // renew, where some held attempts are traced ($6 their `trace/span/handler start in epoch ms`):
    // the row keeps the running attempt's span, so a rescue after a crash records it. The row is
    // rewritten for its lease anyway; untraced workers keep using renew.
    renewTraced: `UPDATE ${s}.job j
       SET lease_expires_at = $3::timestamptz + make_interval(secs => $4::float8 / 1000),
           trace_id = CASE WHEN ${held(1)} IS NULL THEN j.trace_id ELSE nullif(${held(1)}, '') END,
           span_id = CASE WHEN ${held(1)} IS NULL THEN j.span_id ELSE nullif(${held(2)}, '') END,
           handler_started_at = CASE WHEN ${held(1)} IS NULL THEN j.handler_started_at
                                     ELSE to_timestamp(${held(3)}::float8 / 1000) END
     WHERE ${outcomeFence('j', '$1', '$2', '($5::jsonb ->> (j.id::text))::int')}
    RETURNING j.id, j.cancel_requested`,

    // Shutdown hand-back. Jobs that never started ($4 null) give their claim
    // back as if it had not happened: attempt unspent, no history. A running
    // job's attempt was real: it stays in the history as interrupted, and the
    // job gets one more attempt in return, so a deploy never uses its attempts up.
    // A traced one's span and handler start ($7, as renewTraced's $6) go on its history row.
    // A job whose cancel was accepted (cancel_requested) ends cancelled instead of going back: the
    // worker stopped before it acted on the cancel, and another would run the job again.
    handBack: `WITH u AS (
      UPDATE ${s}.job j
         SET state = CASE WHEN j.cancel_requested THEN 'cancelled' ELSE 'queued' END,
             completed_at = CASE WHEN j.cancel_requested THEN $3::timestamptz END,
             last_error = CASE WHEN j.cancel_requested THEN jsonb_build_object(
               'name', '${CANCELLED}',
               'message', format('Job %s was cancelled; its worker %s shut down before it %s',
                                 j.id, $2::text, CASE WHEN $4::jsonb IS NULL THEN 'started it' ELSE 'ended the attempt' END))
             ELSE j.last_error END,
             run_at = $3, worker_id = NULL, lease_expires_at = NULL, reserved = false,
             attempt = CASE WHEN $4::jsonb IS NULL THEN j.attempt - 1 ELSE j.attempt END,
             max_attempts = CASE WHEN $4::jsonb IS NULL OR j.cancel_requested THEN j.max_attempts ELSE j.max_attempts + 1 END,
             trace_id = NULL, span_id = NULL, handler_started_at = NULL
       WHERE ${outcomeFence('j', '$1', '$2', '($5::jsonb ->> (j.id::text))::int')}
      RETURNING j.id, j.attempt, j.started_at, j.queue, j.state, j.batch_id, j.has_dependents, j.last_error,
                $7::jsonb ->> (j.id::text) AS span
    ), ex AS (
      INSERT INTO ${s}.job_execution (job_id, attempt, worker_id, state, claimed_at, started_at, ended_at, error, trace_id, span_id)
      SELECT id, attempt, $2, CASE WHEN state = 'cancelled' THEN 'cancelled' ELSE 'interrupted' END, started_at,
             coalesce(to_timestamp(nullif(split_part(span, '/', 3), '')::float8 / 1000), started_at), $3,
             CASE WHEN state = 'cancelled' THEN last_error ELSE $4::jsonb END,
             nullif(split_part(span, '/', 1), ''), nullif(split_part(span, '/', 2), '')
        FROM u WHERE $4::jsonb IS NOT NULL
    ), ${settleCte(s, `(SELECT * FROM u WHERE state = 'cancelled')`, `'cancelled'`, '$3', '$6')}, n AS (
      SELECT ${notifySql('queue', '$6', 'queue')} FROM (SELECT DISTINCT queue FROM u WHERE state = 'queued') q
    )
    SELECT (SELECT count(*) FROM n)::int AS notified, (SELECT count(*) FROM settled)::int AS settled`,

    // The rescue wrote the interrupted row; the worker that lost the lease adds its span (see recordLostSpan).
    lostSpan: `UPDATE ${s}.job_execution SET trace_id = $4, span_id = $5
     WHERE job_id = $1 AND attempt = $2 AND worker_id = $3 AND state = 'interrupted' AND trace_id IS NULL`,

    progress: `UPDATE ${s}.job SET progress = $4, progress_message = $5
     WHERE id = $1 AND attempt = $2 AND worker_id = $3 AND state = 'active'`,

    // onFailure hooks to run: pending ones whose (re)run is due, and running ones whose instance
    // stopped renewing them. Only names this instance has a handler for. Each claim counts a run,
    // so a hook whose runs keep crashing its instance still ends.
    claimHooks: `WITH c AS (
      SELECT id FROM ${s}.job
       WHERE failure_hook IN ('pending', 'running')
         AND ((failure_hook = 'pending' AND (hook_run_at IS NULL OR hook_run_at <= $2)) OR hook_lease_expires_at < $2)
         AND name = ANY($3::text[])
       ORDER BY id LIMIT $4
       FOR UPDATE SKIP LOCKED
    ), u AS (
      UPDATE ${s}.job j
         SET failure_hook = 'running', hook_worker_id = $1,
             hook_lease_expires_at = $2::timestamptz + make_interval(secs => $5::float8 / 1000),
             hook_attempt = j.hook_attempt + 1, hook_run_at = NULL
        FROM c WHERE j.id = c.id
      RETURNING j.id, j.name, j.queue, j.payload, j.attempt, j.max_attempts, j.timeout_ms, j.batch_id, j.last_error,
                j.hook_attempt, j.context
    )
    SELECT u.id, u.name, u.queue, u.payload, u.attempt, u.max_attempts AS "maxAttempts", u.timeout_ms AS "timeoutMs",
           u.batch_id AS "batchId", u.last_error AS error, u.hook_attempt AS "hookAttempt", u.context, ${LINEAGE_COLUMNS}
      FROM u ${lineageJoin(s, 'u')}`,

    renewHooks: `UPDATE ${s}.job
       SET hook_lease_expires_at = $3::timestamptz + make_interval(secs => $4::float8 / 1000)
     WHERE id = ANY($1::uuid[]) AND failure_hook = 'running' AND hook_worker_id = $2
    RETURNING id`,

    // A run's end ($3 'done', 'pending' with its rerun's time $4, or 'failed'); $5 the error it threw,
    // kept over the last one's when null; $6 true when the claim ran nothing (no hook, or no run left), uncounted.
    settleHook: `UPDATE ${s}.job
       SET failure_hook = $3, hook_run_at = $4, hook_error = coalesce($5::jsonb, hook_error),
           hook_attempt = CASE WHEN $6::boolean THEN hook_attempt - 1 ELSE hook_attempt END,
           hook_worker_id = NULL, hook_lease_expires_at = NULL
     WHERE id = $1 AND failure_hook = 'running' AND hook_worker_id = $2
    RETURNING id`,

    // Hooks this instance stops before they ended, pending again at once: the run is not counted.
    giveBackHooks: `UPDATE ${s}.job
       SET failure_hook = 'pending', hook_attempt = greatest(hook_attempt - 1, 0),
           hook_worker_id = NULL, hook_lease_expires_at = NULL
     WHERE id = ANY($1::uuid[]) AND failure_hook = 'running' AND hook_worker_id = $2
    RETURNING id`,
  };
}

export type OutcomeStatements = ReturnType<typeof outcomeStatements>;
