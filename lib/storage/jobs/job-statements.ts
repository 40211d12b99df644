import { LeaseLostError, LIVE_JOB_STATES, NOT_STARTED_STATES } from '../../model/index.js';
import { quoteIdent, sqlLiterals } from '../connection/sql-identifiers.js';
import { notifySql } from '../notifications/notification-topics.js';

/** The error an interrupted attempt records: the one its worker's signal aborted with. */
const LEASE_LOST = LeaseLostError.name;

/**
 * The hot-path SQL for one schema, built once. Statements take arrays or
 * JSON objects, so any number of rows costs one round trip. Enqueue, claim
 * and the success write run as prepared statements (PREPARED in
 * postgres-job-storage.ts); the rest run unnamed, each planned for its actual
 * batch (~0.2 ms to plan).
 *
 * Outcome and lease statements find their rows with "id = ANY($1)" and read
 * each row's own values (attempt, result, error) from a JSON object keyed by
 * id, instead of joining an unnest() of the values. The fence ("held by this
 * worker, still active") matches almost no row of the table by the planner's
 * statistics, so in a join it put the job table first, scanned it, and
 * compared every active row with every value row: 50 ms for 500 outcomes on a
 * 20k-row table, measured. Without a join the worst plan is one linear scan.
 */
export function jobStatements(schema: string) {
  const s = quoteIdent(schema);
  /** A CTE named "settled" that settles the workflow rows of `source` (columns id, batch_id, has_dependents). */
  const settle = (source: string, state: string, now: string, channel: string) => `w AS (
      SELECT array_agg(id) AS ids, array_agg(${state}::text) AS states FROM ${source} src
       WHERE batch_id IS NOT NULL OR has_dependents
    ), settled AS (
      SELECT ${s}.settle_jobs(w.ids, w.states, ${now}, ${channel}) FROM w WHERE w.ids IS NOT NULL
    )`;
  /** This row's entry in the fail statement's JSON object ($5), and one field of it as text. */
  const failure = `($5::jsonb -> (j.id::text))`;
  const failed = (field: string) => `(${failure} ->> '${field}')`;
  return {
    // Columns as arrays ($1..$14, see encodeNewJobColumns), then now, the
    // channel and the queues that got work due now. The caller knows those
    // queues already; finding them with RETURNING kept every inserted row in
    // a tuplestore first (~7% of PostgreSQL's time on a 20k insert, measured).
    insert: `WITH ins AS (
      INSERT INTO ${s}.job (id, name, queue, payload, state, priority, run_at, max_attempts, timeout_ms,
                            batch_id, group_key, unique_key, remaining_dependencies, trace_context, created_at)
      SELECT t.*, $15 FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::text[], $6::int[],
             $7::timestamptz[], $8::int[], $9::int[], $10::uuid[], $11::text[], $12::text[], $13::int[], $14::jsonb[]) AS t
    )
    SELECT ${notifySql('queue', '$16', 'q')} FROM unnest($17::text[]) q`,

    // The common bulk call: jobs that differ only in id and payload. The
    // shared columns go once as scalars ($3..$14, same order as above), which
    // spares PostgreSQL parsing twelve arrays (~25% of an insert's time).
    insertUniform: `WITH ins AS (
      INSERT INTO ${s}.job (id, name, queue, payload, state, priority, run_at, max_attempts, timeout_ms,
                            batch_id, group_key, unique_key, remaining_dependencies, trace_context, created_at)
      SELECT t.id, $3::text, $4::text, t.payload, $5::text, $6::int, $7::timestamptz, $8::int, $9::int, $10::uuid,
             $11::text, $12::text, $13::int, $14::jsonb, $15
        FROM unnest($1::uuid[], $2::jsonb[]) AS t(id, payload)
    )
    SELECT ${notifySql('queue', '$16', 'q')} FROM unnest($17::text[]) q`,

    // The UPDATE reaches the rows its own subquery locked by ctid (a TID scan,
    // ~10% cheaper per job than a primary-key lookup, measured). That is safe
    // here: the FOR UPDATE lock is ours until commit, so no one can write a
    // newer version of these rows in between. ANY(ARRAY(...)) keeps the
    // planner from joining the subquery against a scan of the whole table.
    claim: `WITH u AS (
      UPDATE ${s}.job j
         SET state = 'active', attempt = j.attempt + 1, worker_id = $5, started_at = $2,
             lease_expires_at = $2::timestamptz + make_interval(secs => $6::float8 / 1000), cancel_requested = false
       WHERE j.ctid = ANY(ARRAY(
         SELECT ctid FROM ${s}.job
          WHERE state = 'queued' AND queue = $1 AND run_at <= $2 AND name = ANY($3::text[])
          ORDER BY priority DESC, run_at, id
          LIMIT $4
          FOR UPDATE SKIP LOCKED))
      RETURNING j.id, j.name, j.queue, j.payload, j.attempt, j.max_attempts, j.timeout_ms, j.batch_id, j.priority, j.run_at,
                j.trace_context
    )
    SELECT id, name, queue, payload, attempt, max_attempts AS "maxAttempts", timeout_ms AS "timeoutMs",
           batch_id AS "batchId", trace_context AS "traceContext"
      FROM u ORDER BY priority DESC, run_at, id`,

    succeed: `WITH u AS (
      UPDATE ${s}.job j
         SET state = 'succeeded', completed_at = $3, result = $6::jsonb -> (j.id::text), lease_expires_at = NULL,
             progress = CASE WHEN j.progress IS NULL THEN NULL ELSE 1 END
       WHERE j.id = ANY($1::uuid[]) AND j.worker_id = $2 AND j.state = 'active'
         AND j.attempt = ($5::jsonb ->> (j.id::text))::int
      RETURNING j.id, j.batch_id, j.has_dependents
    ), ${settle('u', `'succeeded'`, '$3', '$4')}
    SELECT id FROM u UNION ALL SELECT NULL FROM settled`,

    // A failed attempt leaves a history row; the job row moves on in the same statement.
    fail: `WITH u AS (
      UPDATE ${s}.job j
         SET state = ${failed('state')}, run_at = coalesce((${failed('run_at')})::timestamptz, j.run_at),
             last_error = ${failure} -> 'error', lease_expires_at = NULL,
             worker_id = CASE WHEN ${failed('state')} = 'queued' THEN NULL ELSE j.worker_id END,
             completed_at = CASE WHEN ${failed('state')} = 'queued' THEN NULL ELSE $3::timestamptz END,
             failure_hook = CASE WHEN ${failed('state')} = 'failed' THEN ${failed('hook')} END,
             hook_worker_id = CASE WHEN ${failed('hook')} = 'running' THEN $2 END,
             hook_lease_expires_at = CASE WHEN ${failed('hook')} = 'running'
                                          THEN $3::timestamptz + make_interval(secs => $6::float8 / 1000) END
       WHERE j.id = ANY($1::uuid[]) AND j.worker_id = $2 AND j.state = 'active'
         AND j.attempt = (${failed('attempt')})::int
      RETURNING j.id, j.attempt, j.started_at, ${failed('exec_state')} AS exec_state,
                ${failure} -> 'error' AS error, j.state, j.batch_id, j.has_dependents
    ), ex AS (
      INSERT INTO ${s}.job_execution (job_id, attempt, worker_id, state, started_at, ended_at, error)
      SELECT id, attempt, $2, exec_state, started_at, $3, error FROM u
    ), ${settle(`(SELECT * FROM u WHERE state <> 'queued')`, 'state', '$3', '$4')}
    SELECT id FROM u UNION ALL SELECT NULL FROM settled`,

    renew: `UPDATE ${s}.job j
       SET lease_expires_at = $3::timestamptz + make_interval(secs => $4::float8 / 1000)
     WHERE j.id = ANY($1::uuid[]) AND j.worker_id = $2 AND j.state = 'active'
       AND j.attempt = ($5::jsonb ->> (j.id::text))::int
    RETURNING j.id, j.cancel_requested`,

    // Shutdown hand-back. Jobs that never started ($4 null) give their claim
    // back as if it had not happened: attempt unspent, no history. A running
    // job's attempt was real: it stays in the history as interrupted, and the
    // job gets one more attempt in return, so a deploy never uses its attempts up.
    handBack: `WITH u AS (
      UPDATE ${s}.job j
         SET state = 'queued', run_at = $3, worker_id = NULL, lease_expires_at = NULL,
             attempt = CASE WHEN $4::jsonb IS NULL THEN j.attempt - 1 ELSE j.attempt END,
             max_attempts = CASE WHEN $4::jsonb IS NULL THEN j.max_attempts ELSE j.max_attempts + 1 END
       WHERE j.id = ANY($1::uuid[]) AND j.worker_id = $2 AND j.state = 'active'
         AND j.attempt = ($5::jsonb ->> (j.id::text))::int
      RETURNING j.id, j.attempt, j.started_at, j.queue
    ), ex AS (
      INSERT INTO ${s}.job_execution (job_id, attempt, worker_id, state, started_at, ended_at, error)
      SELECT id, attempt, $2, 'interrupted', started_at, $3, $4::jsonb FROM u WHERE $4::jsonb IS NOT NULL
    )
    SELECT ${notifySql('queue', '$6', 'queue')} FROM (SELECT DISTINCT queue FROM u) q`,

    // A rescued job keeps its run_at: it was due before the jobs queued since,
    // so it goes back to the front of its queue rather than behind a backlog.
    // One failed for good gets its onFailure hook recorded, for the sweep.
    rescue: `WITH x AS (
      SELECT id, worker_id FROM ${s}.job
       WHERE state = 'active' AND lease_expires_at < $1
       ORDER BY lease_expires_at LIMIT $2
       FOR UPDATE SKIP LOCKED
    ), u AS (
      UPDATE ${s}.job j
         SET state = CASE WHEN j.attempt >= j.max_attempts THEN 'failed' ELSE 'queued' END,
             lease_expires_at = NULL, worker_id = NULL,
             completed_at = CASE WHEN j.attempt >= j.max_attempts THEN $1::timestamptz END,
             failure_hook = CASE WHEN j.attempt >= j.max_attempts THEN 'pending' END,
             last_error = CASE WHEN j.attempt >= j.max_attempts THEN jsonb_build_object(
               'name', '${LEASE_LOST}',
               'message', format('Attempt %s of %s was interrupted (worker %s stopped renewing its lease) and no attempts remain',
                                 j.attempt, j.max_attempts, x.worker_id))
             ELSE j.last_error END
        FROM x WHERE j.id = x.id
      RETURNING j.id, j.attempt, j.started_at, x.worker_id, j.state, j.queue, j.batch_id, j.has_dependents
    ), ${settle(`(SELECT * FROM u WHERE state = 'failed')`, 'state', '$1', '$3')}, ex AS (
      INSERT INTO ${s}.job_execution (job_id, attempt, worker_id, state, started_at, ended_at, error)
      SELECT id, attempt, worker_id, 'interrupted', started_at, $1,
             jsonb_build_object('name', '${LEASE_LOST}',
                                'message', format('Worker %s stopped renewing the lease (crashed or stalled)', worker_id))
        FROM u
    ), n AS (
      SELECT ${notifySql('queue', '$3', 'queue')} FROM (SELECT DISTINCT queue FROM u WHERE state = 'queued') q
    )
    SELECT (SELECT count(*) FROM u)::int AS rescued, (SELECT count(*) FROM u WHERE state = 'failed')::int AS failed,
           (SELECT count(*) FROM n)::int AS notified, (SELECT count(*) FROM settled)::int AS settled`,

    // onFailure hooks to run: pending ones, and running ones whose instance
    // stopped renewing them. Only names this instance has a handler for.
    claimHooks: `WITH c AS (
      SELECT id FROM ${s}.job
       WHERE failure_hook IN ('pending', 'running')
         AND (failure_hook = 'pending' OR hook_lease_expires_at < $2)
         AND name = ANY($3::text[])
       ORDER BY id LIMIT $4
       FOR UPDATE SKIP LOCKED
    )
    UPDATE ${s}.job j
       SET failure_hook = 'running', hook_worker_id = $1,
           hook_lease_expires_at = $2::timestamptz + make_interval(secs => $5::float8 / 1000)
      FROM c WHERE j.id = c.id
    RETURNING j.id, j.name, j.queue, j.payload, j.attempt, j.max_attempts AS "maxAttempts", j.timeout_ms AS "timeoutMs",
              j.batch_id AS "batchId", j.last_error AS error`,

    renewHooks: `UPDATE ${s}.job
       SET hook_lease_expires_at = $3::timestamptz + make_interval(secs => $4::float8 / 1000)
     WHERE id = ANY($1::uuid[]) AND failure_hook = 'running' AND hook_worker_id = $2
    RETURNING id`,

    // 'done' after the hook ran; back to 'pending' when this instance stops before it could.
    settleHooks: `UPDATE ${s}.job SET failure_hook = $3, hook_worker_id = NULL, hook_lease_expires_at = NULL
     WHERE id = ANY($1::uuid[]) AND failure_hook = 'running' AND hook_worker_id = $2
    RETURNING id`,

    progress: `UPDATE ${s}.job SET progress = $4, progress_message = $5
     WHERE id = $1 AND attempt = $2 AND worker_id = $3 AND state = 'active'`,

    cancelQueued: `WITH u AS (
      UPDATE ${s}.job SET state = 'cancelled', completed_at = $2, cancel_requested = true
       WHERE id = $1 AND state IN (${sqlLiterals(NOT_STARTED_STATES)}) RETURNING id, batch_id, has_dependents
    ), ${settle('u', `'cancelled'`, '$2', '$3')}
    SELECT id FROM u UNION ALL SELECT NULL FROM settled`,

    cancelActive: `WITH u AS (
      UPDATE ${s}.job SET cancel_requested = true WHERE id = $1 AND state = 'active' RETURNING id
    )
    SELECT id, ${notifySql('cancel', '$2', 'id')} FROM u`,

    // A retried job that settled a batch or parents reopens them (reopen_job).
    retry: `WITH prev AS (
      SELECT id, state, batch_id, has_dependents FROM ${s}.job WHERE id = $1 AND state = ANY($4::text[]) FOR UPDATE
    ), u AS (
      UPDATE ${s}.job j
         SET state = 'queued', max_attempts = j.attempt + j.max_attempts, run_at = $2, completed_at = NULL,
             worker_id = NULL, cancel_requested = false, result = NULL, progress = NULL, progress_message = NULL,
             failure_hook = NULL, hook_worker_id = NULL, hook_lease_expires_at = NULL
        FROM prev WHERE j.id = prev.id RETURNING j.id, j.queue
    ), r AS (
      SELECT ${s}.reopen_job(prev.id, prev.state) FROM prev WHERE prev.batch_id IS NOT NULL OR prev.has_dependents
    )
    SELECT id, ${notifySql('queue', '$3', 'queue')} FROM u UNION ALL SELECT NULL, NULL FROM r`,

    stateOf: `SELECT state FROM ${s}.job WHERE id = $1`,

    getJob: `SELECT * FROM ${s}.job WHERE id = $1`,
    getExecutions: `SELECT * FROM ${s}.job_execution WHERE job_id = $1 ORDER BY attempt, id`,

    // A loose index scan over the claim index: one probe per distinct queue.
    queuesWithWork: `WITH RECURSIVE q AS (
      (SELECT queue FROM ${s}.job WHERE state = 'queued' ORDER BY queue LIMIT 1)
      UNION ALL
      SELECT (SELECT j.queue FROM ${s}.job j WHERE j.state = 'queued' AND j.queue > q.queue ORDER BY j.queue LIMIT 1)
        FROM q WHERE q.queue IS NOT NULL
    )
    SELECT queue FROM q WHERE queue IS NOT NULL`,

    registerWorker: `INSERT INTO ${s}.worker (id, host, pid, queues, concurrency, started_at, last_heartbeat)
      VALUES ($1, $2, $3, $4, $5, $6, $6)
      ON CONFLICT (id) DO UPDATE SET last_heartbeat = EXCLUDED.last_heartbeat, stopped_at = NULL`,
    // No row: retention removed it (a clock that jumped); the worker registers again.
    heartbeatWorker: `UPDATE ${s}.worker SET last_heartbeat = $2, active = $3 WHERE id = $1 RETURNING 1`,
    unregisterWorker: `UPDATE ${s}.worker SET stopped_at = $2, active = 0 WHERE id = $1`,

    // Retention walks the primary key: ids are UUIDv7, so "created before the
    // cutoff" is a key range and no completed_at index is paid for on every
    // completion. Batch members go with their batch; parents wait for children.
    prune: `WITH doomed AS (
      SELECT j.id FROM ${s}.job j
       WHERE j.id < $1::uuid AND j.state = ANY($2::text[]) AND j.completed_at < $3 AND j.batch_id IS NULL
         AND NOT (j.has_dependents AND EXISTS (
               SELECT 1 FROM ${s}.job_dependency d JOIN ${s}.job c ON c.id = d.child_id
                WHERE d.parent_job_id = j.id AND c.state IN (${sqlLiterals(LIVE_JOB_STATES)})))
       ORDER BY j.id LIMIT $4
       FOR UPDATE SKIP LOCKED
    )
    DELETE FROM ${s}.job j USING doomed WHERE j.id = doomed.id RETURNING 1`,
    // Rows of workers stopped (or silent: crashed) before $1.
    pruneWorkers: `DELETE FROM ${s}.worker WHERE coalesce(stopped_at, last_heartbeat) < $1 RETURNING 1`,
    // A settled batch goes with its members (the foreign keys cascade), so
    // like a job it stays while a live job still waits on it or on one of them.
    pruneBatches: `DELETE FROM ${s}.job_batch
     WHERE id IN (
       SELECT b.id FROM ${s}.job_batch b
        WHERE b.id < $1::uuid AND b.state <> 'executing' AND b.completed_at < $2
          AND NOT EXISTS (
                SELECT 1 FROM ${s}.job_dependency d JOIN ${s}.job c ON c.id = d.child_id
                 WHERE d.parent_batch_id = b.id AND c.state IN (${sqlLiterals(LIVE_JOB_STATES)}))
          AND NOT EXISTS (
                SELECT 1 FROM ${s}.job m
                  JOIN ${s}.job_dependency d ON d.parent_job_id = m.id
                  JOIN ${s}.job c ON c.id = d.child_id
                 WHERE m.batch_id = b.id AND m.has_dependents AND c.state IN (${sqlLiterals(LIVE_JOB_STATES)}))
        ORDER BY b.id LIMIT $3) RETURNING 1`,
  };
}

export type JobStatements = ReturnType<typeof jobStatements>;
