import { JobCancelledError } from '../../../model/index.js';
import { statement, type Placeholders } from '../../sql/named-params.js';
import type {
  OutcomeBatch,
  SucceedParams,
  SucceedWithSuccessorsParams,
  SucceedAndClaimParams,
  ForgetParams,
  RenewParams,
  HeldRow,
} from './outcome-params.js';
import { quoteIdent } from '../../sql/sql-identifiers.js';
import { notifySql } from '../../sql/notification-topics.js';
import { dueMs, lineageJoin, LINEAGE_COLUMNS, settleCte } from '../job-fragments.js';
import { ROUTINE_NAMES } from '../../routines/routine-catalog.js';
import { outcomeFence } from '../../routines/sql-fragments.js';

/**
 * The SQL of what a worker writes about the jobs it holds, for one schema,
 * built once. The success writes run as prepared statements; the rarer
 * ones stay unnamed, each planned for its actual batch (~0.2 ms to plan).
 *
 * Outcome and lease statements find their rows with "id = ANY(<ids>)" and read
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
  /** The fenced row's attempt in a JSON object of attempts by id. */
  const attemptIn = (attempts: string) => `(${attempts}::jsonb ->> (j.id::text))::int`;
  /**
   * The success write of the rows `where` picks (fenced like every outcome). A success leaves no
   * history row: a traced one's span and handler start stay on the job row, in this same write; its
   * claim time is the row's started_at.
   */
  const succeeded = (p: Placeholders<SucceedParams>, where: string) => {
    const part = (n: number) =>
      `CASE WHEN ${p.traces}::jsonb IS NULL THEN NULL ELSE nullif(split_part(${p.traces}::jsonb ->> (j.id::text), '/', ${n}), '') END`;
    return `UPDATE ${s}.job j
         SET state = 'succeeded', completed_at = ${p.now}, result = ${p.results}::jsonb -> (j.id::text), lease_expires_at = NULL,
             progress = CASE WHEN j.progress IS NULL THEN NULL ELSE 1 END,
             handler_started_at = to_timestamp(${part(3)}::float8 / 1000), trace_id = ${part(1)}, span_id = ${part(2)}
       WHERE ${where}
      RETURNING j.id, j.batch_id, j.has_dependents`;
  };
  /** The fence of a success write of the rows `ids`: held by this worker, still active, in the attempt it reports. */
  const fenced = (p: Placeholders<SucceedParams>, ids: string = p.ids) =>
    outcomeFence('j', ids, p.workerId, attemptIn(p.attempts));
  /**
   * The success writes as CTEs ending in "u" (columns id, batch_id, has_dependents). Forgetting,
   * the jobs of `forget` are deleted instead, unless another job waits on them as its parent, or
   * waitFor() or a parent's ctx.invoke() awaits their end; every success the delete did not take
   * is updated and kept for retention. The update reads what the delete returned (which runs it
   * first), not a predicate of its own on the statement's snapshot: a waitFor() committed while the
   * delete waited for a row makes the delete pass it over, and the update then writes it, where two
   * predicates on the snapshot would leave it neither deleted nor updated. Their throughput goes to
   * job_forgotten.
   */
  const successes = (p: Placeholders<SucceedParams>, forget: string | null) => {
    if (forget === null)
      return `u AS (
      ${succeeded(p, fenced(p))}
    )`;
    return `forgotten AS (
      DELETE FROM ${s}.job j
       WHERE ${fenced(p, forget)} AND NOT j.has_dependents AND NOT j.awaited
      RETURNING j.id, j.batch_id, j.has_dependents, j.queue
    ), kept AS (
      ${succeeded(p, fenced(p, `ARRAY(SELECT unnest(${p.ids}::uuid[]) EXCEPT SELECT id FROM forgotten)`))}
    ), counted AS (
      INSERT INTO ${s}.job_forgotten (minute, queue, backend, succeeded)
      SELECT to_timestamp(floor(extract(epoch FROM ${p.now}::timestamptz) / 60) * 60), queue, pg_backend_pid(), count(*)
        FROM forgotten GROUP BY queue
      ON CONFLICT (minute, queue, backend) DO UPDATE SET succeeded = ${s}.job_forgotten.succeeded + excluded.succeeded
    ), u AS (
      SELECT id, batch_id, has_dependents FROM kept UNION ALL SELECT id, batch_id, has_dependents FROM forgotten
    )`;
  };
  /**
   * The jobs claimed ahead that started in the place of the successes written: counted by their
   * queue's limit from this write on. Only where the success was written: a success the fence
   * refused frees no slot.
   */
  const promoted = (successors: string, workerId: string) => `promoted AS (
      UPDATE ${s}.job p SET reserved = false
       WHERE p.id = ANY(ARRAY(SELECT (${successors}::jsonb ->> u.id::text)::uuid FROM u))
         AND p.worker_id = ${workerId} AND p.state = 'active' AND p.reserved
      RETURNING p.id
    )`;
  const HELD = ['jobId', 'attempt', 'workerId'] as const;
  const RENEW = ['ids', 'workerId', 'now', 'leaseMs', 'attempts'] as const;
  const SUCCEED = ['ids', 'workerId', 'now', 'channel', 'attempts', 'results', 'traces'] as const;
  const CLAIM = ['queue', 'names', 'limit', 'leaseMs', 'share', 'ahead', 'successors'] as const;
  /** The success writes' texts; `forget`: the placeholder of the jobs to forget, null to keep them all. */
  const succeed = (p: Placeholders<SucceedParams>, forget: string | null) => `WITH ${successes(p, forget)},
    ${settleCte(s, 'u', `'succeeded'`, p.now, p.channel)}
    SELECT id FROM u UNION ALL SELECT NULL FROM settled`;
  // succeed, where some of the successes had a job claimed ahead start in their place.
  const withSuccessors = (
    p: Placeholders<SucceedWithSuccessorsParams>,
    forget: string | null,
  ) => `WITH ${successes(p, forget)},
    ${settleCte(s, 'u', `'succeeded'`, p.now, p.channel)}, ${promoted(p.successors, p.workerId)}
    SELECT id FROM u UNION ALL SELECT NULL FROM settled`;
  // succeed, and a claim of a limited queue in the same statement: the slots these
  // outcomes free are refilled without a second round trip. The claim's argument reads u and
  // settled, so both are written before claim_controlled runs; as a volatile function its
  // statements see them (the freed slots count as free) and take the queue's lock after this
  // statement's row locks, the order every outcome write keeps. Rows: done = true for an
  // applied outcome (id only), false for a claimed job or the rate limit's wait row.
  const andClaim = (p: Placeholders<SucceedAndClaimParams>, forget: string | null) => `WITH ${successes(p, forget)},
    ${settleCte(s, 'u', `'succeeded'`, p.now, p.channel)}, ${promoted(p.successors, p.workerId)}, written AS (
      SELECT (SELECT count(*) FROM u) + (SELECT count(*) FROM settled) + (SELECT count(*) FROM promoted) AS n
    )
    SELECT true AS done, id, NULL::text AS name, NULL::text AS queue, NULL::jsonb AS payload, NULL::int AS attempt,
           NULL::int AS "maxAttempts", NULL::int AS "timeoutMs", NULL::uuid AS "batchId", NULL::jsonb AS "traceContext",
           NULL::timestamptz AS deadline, NULL::float8 AS "runAt", NULL::float8 AS "waitMs", NULL::boolean AS reserved, NULL::uuid[] AS "parentIds",
           NULL::uuid AS "parentBatchId", NULL::jsonb AS context
      FROM u
    UNION ALL
    SELECT false, c.id, c.name, c.queue, c.payload, c.attempt, c.max_attempts, c.timeout_ms, c.batch_id, c.trace_context,
           c.deadline, ${dueMs('c.run_at')}, c.wait_ms, c.reserved, p.parent_ids, p.parent_batch_id, c.context
      FROM written CROSS JOIN LATERAL ${s}.${ROUTINE_NAMES.claimControlled}(${p.queue}, ${p.names}::text[], ${p.limit} + 0 * written.n::int, ${p.now}, ${p.workerId}, ${p.leaseMs}, ${p.channel}, ${p.share}, ${p.ahead}) c
      ${lineageJoin(s, 'c')}`;
  return {
    succeed: statement<SucceedParams>()(SUCCEED, (p) => succeed(p, null)),
    succeedWithSuccessors: statement<SucceedWithSuccessorsParams>()([...SUCCEED, 'successors'], (p) =>
      withSuccessors(p, null),
    ),
    succeedAndClaim: statement<SucceedAndClaimParams>()([...SUCCEED, ...CLAIM], (p) => andClaim(p, null)),
    // The same three writes for batches where some successes are of job types that keep none.
    forget: statement<SucceedParams & ForgetParams>()([...SUCCEED, 'forget'], (p) => succeed(p, p.forget)),
    forgetWithSuccessors: statement<SucceedWithSuccessorsParams & ForgetParams>()(
      [...SUCCEED, 'successors', 'forget'],
      (p) => withSuccessors(p, p.forget),
    ),
    forgetAndClaim: statement<SucceedAndClaimParams & ForgetParams>()([...SUCCEED, ...CLAIM, 'forget'], (p) =>
      andClaim(p, p.forget),
    ),

    // A failed attempt leaves a history row; the job row moves on in the same statement. One that
    // would go back to the queue (a retry, a snooze) while its cancel was accepted ends cancelled:
    // the cancel arrived as the attempt was ending, and the worker had not acted on it.
    fail: statement<OutcomeBatch & { failures: string; leaseMs: number }>()(
      ['ids', 'workerId', 'now', 'channel', 'failures', 'leaseMs'],
      (p) => {
        /** This row's entry in the failures' JSON object, and one field of it as text. */
        const failure = `(${p.failures}::jsonb -> (j.id::text))`;
        const failed = (field: string) => `(${failure} ->> '${field}')`;
        /** The next state of row j: the attempt's, unless a retry or snooze meets an accepted cancel. */
        const next = `(CASE WHEN j.cancel_requested AND ${failed('state')} = 'queued' THEN 'cancelled' ELSE ${failed('state')} END)`;
        return `WITH u AS (
      UPDATE ${s}.job j
         SET state = ${next},
             -- A signal wait's park whose signal came meanwhile (the signal cleared awaits_signal under
             -- this row's lock) is due now, not at its deadline.
             run_at = CASE WHEN ${failed('signal')} IS NOT NULL AND j.awaits_signal IS DISTINCT FROM ${failed('signal')}
                           THEN ${p.now}::timestamptz
                           ELSE coalesce((${failed('run_at')})::timestamptz, j.run_at) END,
             max_attempts = j.max_attempts + CASE WHEN (${failed('extra')})::boolean THEN 1 ELSE 0 END,
             last_error = CASE WHEN ${next} = 'cancelled' AND ${failed('state')} = 'queued' THEN jsonb_build_object(
               'name', '${CANCELLED}',
               'message', format('Job %s was cancelled as its attempt %s ended (%s); it is not run again',
                                 j.id, j.attempt, ${failure} -> 'error' ->> 'message'))
             ELSE ${failure} -> 'error' END,
             lease_expires_at = NULL,
             worker_id = CASE WHEN ${next} = 'queued' THEN NULL ELSE j.worker_id END,
             completed_at = CASE WHEN ${next} = 'queued' THEN NULL ELSE ${p.now}::timestamptz END,
             failure_hook = CASE WHEN ${failed('state')} = 'failed' THEN ${failed('hook')} END,
             hook_worker_id = CASE WHEN ${failed('hook')} = 'running' THEN ${p.workerId} END,
             hook_lease_expires_at = CASE WHEN ${failed('hook')} = 'running'
                                          THEN ${p.now}::timestamptz + make_interval(secs => ${p.leaseMs}::float8 / 1000) END,
             hook_attempt = CASE WHEN ${failed('hook')} = 'running' THEN 1 ELSE 0 END,
             hook_run_at = NULL, hook_error = NULL,
             -- A traced renewal's span of this attempt: the next attempt's rescue must not record it.
             trace_id = NULL, span_id = NULL, handler_started_at = NULL
       WHERE ${outcomeFence('j', p.ids, p.workerId, `(${failed('attempt')})::int`)}
      RETURNING j.id, j.attempt, j.started_at, ${failed('exec_state')} AS exec_state,
                ${failure} -> 'error' AS error, ${failure} -> 'run' AS run, j.state, j.batch_id, j.has_dependents
    ), ex AS (
      INSERT INTO ${s}.job_execution (job_id, attempt, worker_id, state, claimed_at, started_at, ended_at, error, trace_id, span_id)
      SELECT id, attempt, ${p.workerId}, exec_state, (run ->> 'claimed')::timestamptz, coalesce((run ->> 'started')::timestamptz, started_at),
             ${p.now}, error, run ->> 'trace', run ->> 'span'
        FROM u
    ), ${settleCte(s, `(SELECT * FROM u WHERE state <> 'queued')`, 'state', p.now, p.channel)}
    SELECT id FROM u UNION ALL SELECT NULL FROM settled`;
      },
    ),

    renew: statement<RenewParams>()(
      RENEW,
      (p) => `UPDATE ${s}.job j
       SET lease_expires_at = ${p.now}::timestamptz + make_interval(secs => ${p.leaseMs}::float8 / 1000)
     WHERE ${outcomeFence('j', p.ids, p.workerId, attemptIn(p.attempts))}
    RETURNING j.id, j.cancel_requested`,
    ),

    // renew, where some held attempts are traced (`spans`: their `trace/span/handler start in epoch ms`):
    // the row keeps the running attempt's span, so a rescue after a crash records it. The row is
    // rewritten for its lease anyway; untraced workers keep using renew.
    renewTraced: statement<RenewParams & { spans: string }>()([...RENEW, 'spans'], (p) => {
      /** One part of this row's `trace/span/handler start`. */
      const held = (n: number) => `split_part(${p.spans}::jsonb ->> (j.id::text), '/', ${n})`;
      return `UPDATE ${s}.job j
       SET lease_expires_at = ${p.now}::timestamptz + make_interval(secs => ${p.leaseMs}::float8 / 1000),
           trace_id = CASE WHEN ${held(1)} IS NULL THEN j.trace_id ELSE nullif(${held(1)}, '') END,
           span_id = CASE WHEN ${held(1)} IS NULL THEN j.span_id ELSE nullif(${held(2)}, '') END,
           handler_started_at = CASE WHEN ${held(1)} IS NULL THEN j.handler_started_at
                                     ELSE to_timestamp(${held(3)}::float8 / 1000) END
     WHERE ${outcomeFence('j', p.ids, p.workerId, attemptIn(p.attempts))}
    RETURNING j.id, j.cancel_requested`;
    }),

    // Shutdown hand-back. Jobs that never started (`error` null) give their claim
    // back as if it had not happened: attempt unspent, no history. A running
    // job's attempt was real: it stays in the history as interrupted, and the
    // job gets one more attempt in return, so a deploy never uses its attempts up.
    // A traced one's span and handler start (`spans`, as renewTraced's) go on its history row.
    // A job whose cancel was accepted (cancel_requested) ends cancelled instead of going back: the
    // worker stopped before it acted on the cancel, and another would run the job again.
    handBack: statement<{
      ids: readonly string[];
      workerId: string;
      now: Date;
      error: string | null;
      attempts: string;
      channel: string;
      spans: string | null;
    }>()(
      ['ids', 'workerId', 'now', 'error', 'attempts', 'channel', 'spans'],
      (p) => `WITH u AS (
      UPDATE ${s}.job j
         SET state = CASE WHEN j.cancel_requested THEN 'cancelled' ELSE 'queued' END,
             completed_at = CASE WHEN j.cancel_requested THEN ${p.now}::timestamptz END,
             last_error = CASE WHEN j.cancel_requested THEN jsonb_build_object(
               'name', '${CANCELLED}',
               'message', format('Job %s was cancelled; its worker %s shut down before it %s',
                                 j.id, ${p.workerId}::text, CASE WHEN ${p.error}::jsonb IS NULL THEN 'started it' ELSE 'ended the attempt' END))
             ELSE j.last_error END,
             run_at = ${p.now}, worker_id = NULL, lease_expires_at = NULL, reserved = false,
             attempt = CASE WHEN ${p.error}::jsonb IS NULL THEN j.attempt - 1 ELSE j.attempt END,
             max_attempts = CASE WHEN ${p.error}::jsonb IS NULL OR j.cancel_requested THEN j.max_attempts ELSE j.max_attempts + 1 END,
             trace_id = NULL, span_id = NULL, handler_started_at = NULL
       WHERE ${outcomeFence('j', p.ids, p.workerId, attemptIn(p.attempts))}
      RETURNING j.id, j.attempt, j.started_at, j.queue, j.state, j.batch_id, j.has_dependents, j.last_error,
                ${p.spans}::jsonb ->> (j.id::text) AS span
    ), ex AS (
      INSERT INTO ${s}.job_execution (job_id, attempt, worker_id, state, claimed_at, started_at, ended_at, error, trace_id, span_id)
      SELECT id, attempt, ${p.workerId}, CASE WHEN state = 'cancelled' THEN 'cancelled' ELSE 'interrupted' END, started_at,
             coalesce(to_timestamp(nullif(split_part(span, '/', 3), '')::float8 / 1000), started_at), ${p.now},
             CASE WHEN state = 'cancelled' THEN last_error ELSE ${p.error}::jsonb END,
             nullif(split_part(span, '/', 1), ''), nullif(split_part(span, '/', 2), '')
        FROM u WHERE ${p.error}::jsonb IS NOT NULL
    ), ${settleCte(s, `(SELECT * FROM u WHERE state = 'cancelled')`, `'cancelled'`, p.now, p.channel)}, n AS (
      SELECT ${notifySql('queue', p.channel, 'queue')} FROM (SELECT DISTINCT queue FROM u WHERE state = 'queued') q
    )
    SELECT (SELECT count(*) FROM n)::int AS notified, (SELECT count(*) FROM settled)::int AS settled`,
    ),

    // The rescue wrote the interrupted row; the worker that lost the lease adds its span (see recordLostSpan).
    lostSpan: statement<HeldRow & { traceId: string; spanId: string | null }>()(
      [...HELD, 'traceId', 'spanId'],
      (p) => `UPDATE ${s}.job_execution SET trace_id = ${p.traceId}, span_id = ${p.spanId}
     WHERE job_id = ${p.jobId} AND attempt = ${p.attempt} AND worker_id = ${p.workerId} AND state = 'interrupted' AND trace_id IS NULL`,
    ),

    progress: statement<HeldRow & { progress: number; message: string | null }>()(
      [...HELD, 'progress', 'message'],
      (p) => `UPDATE ${s}.job SET progress = ${p.progress}, progress_message = ${p.message}
     WHERE id = ${p.jobId} AND attempt = ${p.attempt} AND worker_id = ${p.workerId} AND state = 'active'`,
    ),

    // onFailure hooks to run: pending ones whose (re)run is due, and running ones whose instance
    // stopped renewing them. Only names this instance has a handler for. Each claim counts a run,
    // so a hook whose runs keep crashing its instance still ends.
    claimHooks: statement<{ workerId: string; now: Date; names: readonly string[]; limit: number; leaseMs: number }>()(
      ['workerId', 'now', 'names', 'limit', 'leaseMs'],
      (p) => `WITH c AS (
      SELECT id FROM ${s}.job
       WHERE failure_hook IN ('pending', 'running')
         AND ((failure_hook = 'pending' AND (hook_run_at IS NULL OR hook_run_at <= ${p.now})) OR hook_lease_expires_at < ${p.now})
         AND name = ANY(${p.names}::text[])
       ORDER BY id LIMIT ${p.limit}
       FOR UPDATE SKIP LOCKED
    ), u AS (
      UPDATE ${s}.job j
         SET failure_hook = 'running', hook_worker_id = ${p.workerId},
             hook_lease_expires_at = ${p.now}::timestamptz + make_interval(secs => ${p.leaseMs}::float8 / 1000),
             hook_attempt = j.hook_attempt + 1, hook_run_at = NULL
        FROM c WHERE j.id = c.id
      RETURNING j.id, j.name, j.queue, j.payload, j.attempt, j.max_attempts, j.timeout_ms, j.batch_id, j.last_error,
                j.hook_attempt, j.context
    )
    SELECT u.id, u.name, u.queue, u.payload, u.attempt, u.max_attempts AS "maxAttempts", u.timeout_ms AS "timeoutMs",
           u.batch_id AS "batchId", u.last_error AS error, u.hook_attempt AS "hookAttempt", u.context, ${LINEAGE_COLUMNS}
      FROM u ${lineageJoin(s, 'u')}`,
    ),

    renewHooks: statement<{ ids: readonly string[]; workerId: string; now: Date; leaseMs: number }>()(
      ['ids', 'workerId', 'now', 'leaseMs'],
      (p) => `UPDATE ${s}.job
       SET hook_lease_expires_at = ${p.now}::timestamptz + make_interval(secs => ${p.leaseMs}::float8 / 1000)
     WHERE id = ANY(${p.ids}::uuid[]) AND failure_hook = 'running' AND hook_worker_id = ${p.workerId}
    RETURNING id`,
    ),

    // A run's end (`state` 'done', 'pending' with its rerun's time, or 'failed'); `error` the one it threw,
    // kept over the last one's when null; `none` when the claim ran nothing (no hook, or no run left), uncounted.
    settleHook: statement<{
      jobId: string;
      workerId: string;
      state: string;
      runAt: Date | null;
      error: string | null;
      none: boolean;
    }>()(
      ['jobId', 'workerId', 'state', 'runAt', 'error', 'none'],
      (p) => `UPDATE ${s}.job
       SET failure_hook = ${p.state}, hook_run_at = ${p.runAt}, hook_error = coalesce(${p.error}::jsonb, hook_error),
           hook_attempt = CASE WHEN ${p.none}::boolean THEN hook_attempt - 1 ELSE hook_attempt END,
           hook_worker_id = NULL, hook_lease_expires_at = NULL
     WHERE id = ${p.jobId} AND failure_hook = 'running' AND hook_worker_id = ${p.workerId}
    RETURNING id`,
    ),

    // Hooks this instance stops before they ended, pending again at once: the run is not counted.
    giveBackHooks: statement<{ ids: readonly string[]; workerId: string }>()(
      ['ids', 'workerId'],
      (p) => `UPDATE ${s}.job
       SET failure_hook = 'pending', hook_attempt = greatest(hook_attempt - 1, 0),
           hook_worker_id = NULL, hook_lease_expires_at = NULL
     WHERE id = ANY(${p.ids}::uuid[]) AND failure_hook = 'running' AND hook_worker_id = ${p.workerId}
    RETURNING id`,
    ),
  };
}

export type OutcomeStatements = ReturnType<typeof outcomeStatements>;
