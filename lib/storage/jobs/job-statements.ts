import { DeadlineExceededError, LeaseLostError, LIVE_JOB_STATES, NOT_STARTED_STATES } from '../../model/index.js';
import { quoteIdent, sqlLiterals } from '../connection/sql-identifiers.js';
import { notifySql } from '../notifications/notification-topics.js';
import { NEW_JOB_COLUMN_NAMES, unnestNewJobs } from './job-encoding.js';

/** The error an interrupted attempt records: the one its worker's signal aborted with. */
const LEASE_LOST = LeaseLostError.name;
const DEADLINE_EXCEEDED = DeadlineExceededError.name;

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
  /**
   * The parents of a claimed job (`alias`): the jobs it waited on or continued from, and the batch
   * whose callback it is, for ctx.parentIds and ctx.batchId. The controlled claim's rows do not say
   * whether a job has parents, so each costs a probe of the child index (~2 us a job, measured on
   * the plain claim before has_parents); the plain claim reads it only for jobs with has_parents.
   */
  const lineage = (alias: string) => `LEFT JOIN LATERAL (
      SELECT array_agg(d.parent_job_id ORDER BY d.parent_job_id) FILTER (WHERE d.parent_job_id IS NOT NULL) AS parent_ids,
             (array_agg(d.parent_batch_id) FILTER (WHERE d.parent_batch_id IS NOT NULL))[1] AS parent_batch_id
        FROM ${s}.job_dependency d WHERE d.child_id = ${alias}.id
    ) p ON true`;
  const lineageColumns = `p.parent_ids AS "parentIds", p.parent_batch_id AS "parentBatchId"`;
  /** The same for a row that carries has_parents: a job without parents costs one test of a flag. */
  const lineageIfParents = (alias: string) => `CASE WHEN ${alias}.has_parents THEN (
        SELECT array_agg(d.parent_job_id ORDER BY d.parent_job_id) FROM ${s}.job_dependency d
         WHERE d.child_id = ${alias}.id AND d.parent_job_id IS NOT NULL) END AS "parentIds",
      CASE WHEN ${alias}.has_parents THEN (
        SELECT d.parent_batch_id FROM ${s}.job_dependency d
         WHERE d.child_id = ${alias}.id AND d.parent_batch_id IS NOT NULL LIMIT 1) END AS "parentBatchId"`;
  /** This row's entry in the fail statement's JSON object ($5), and one field of it as text. */
  const failure = `($5::jsonb -> (j.id::text))`;
  const failed = (field: string) => `(${failure} ->> '${field}')`;
  /** The success write ($1 ids, $2 worker, $3 now, $5 attempts, $6 results), fenced like every outcome. */
  const succeeded = `UPDATE ${s}.job j
         SET state = 'succeeded', completed_at = $3, result = $6::jsonb -> (j.id::text), lease_expires_at = NULL,
             progress = CASE WHEN j.progress IS NULL THEN NULL ELSE 1 END
       WHERE j.id = ANY($1::uuid[]) AND j.worker_id = $2 AND j.state = 'active'
         AND j.attempt = ($5::jsonb ->> (j.id::text))::int
      RETURNING j.id, j.batch_id, j.has_dependents`;
  /**
   * How both unique inserts end: a held key makes the row a no-op; the ids written. The queues
   * with work due in the chunk ($21) are woken if any row was written: returning each row's queue,
   * state and run time to find them cost ~7% of the statement.
   */
  const uniqueInsertEnd = `ON CONFLICT DO NOTHING
      RETURNING id
    ), n AS (
      SELECT ${notifySql('queue', '$20', 'q')} FROM unnest($21::text[]) q WHERE EXISTS (SELECT 1 FROM ins)
    )
    SELECT id FROM ins UNION ALL SELECT NULL FROM n`;
  return {
    // Columns as arrays ($1..$18, NEW_JOB_COLUMNS), then now, the channel
    // and the queues that got work due now. The caller knows those queues
    // already; finding them with RETURNING kept every inserted row in a
    // tuplestore first (~7% of PostgreSQL's time on a 20k insert, measured).
    insert: `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.*, $19 FROM ${unnestNewJobs(1)}
    )
    SELECT ${notifySql('queue', '$20', 'q')} FROM unnest($21::text[]) q`,

    // The common bulk call: jobs that differ only in id and payload. The
    // shared columns go once as scalars ($3..$18, in NEW_JOB_COLUMNS' order),
    // which spares PostgreSQL parsing sixteen arrays (~25% of an insert's time).
    insertUniform: `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.id, $3::text, $4::text, t.payload, $5::text, $6::int, $7::timestamptz, $8::int, $9::int, $10::uuid,
             $11::text, $12::text, $13::int, $14::jsonb, $15::text, $16::timestamptz, $17::text, $18::bigint, $19
        FROM unnest($1::uuid[], $2::jsonb[]) AS t(id, payload)
    )
    SELECT ${notifySql('queue', '$20', 'q')} FROM unnest($21::text[]) q`,

    // Jobs with unique keys: a key already held makes the row a no-op (the
    // unique indexes decide, whichever instance writes first). Returns the ids
    // written; the caller looks up the holders of the others.
    insertUnique: `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.*, $19 FROM ${unnestNewJobs(1)}
      ${uniqueInsertEnd}`,

    // insertUnique for jobs that share all but id, payload and key (see encodeUniformJobs): three
    // arrays instead of eighteen, as insertUniform does for plain jobs.
    insertUniqueUniform: `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.id, $3::text, $4::text, t.payload, $5::text, $6::int, $7::timestamptz, $8::int, $9::int, $10::uuid,
             $11::text, t.key, $13::int, $14::jsonb, $15::text, $16::timestamptz, $17::text, $18::bigint, $19
        FROM unnest($1::uuid[], $2::jsonb[], $12::text[]) AS t(id, payload, key)
      ${uniqueInsertEnd}`,

    // The jobs holding these keys now, in the way each holds it ($2: while, $3: window, per key).
    uniqueHolders: `SELECT j.id, j.unique_key, j.unique_while, j.unique_window
      FROM ${s}.job j JOIN unnest($1::text[], $2::text[], $3::bigint[]) AS k(key, while_, window_)
        ON j.unique_key = k.key
     WHERE (k.window_ IS NOT NULL AND j.unique_window = k.window_)
        OR (k.window_ IS NULL AND j.unique_window IS NULL AND j.unique_while = k.while_ AND j.state = ANY(
              CASE k.while_ WHEN 'queued' THEN ARRAY['waiting', 'queued']
                            WHEN 'queued-or-active' THEN ARRAY['waiting', 'queued', 'active']
                            ELSE ARRAY['waiting', 'queued', 'active', 'failed'] END))`,

    // A debounce: the waiting (or queued) job holding the key takes the new payload and run time.
    replaceUnique: `WITH u AS (
      UPDATE ${s}.job j SET payload = $4::jsonb, run_at = $5
       WHERE j.id = $1 AND j.unique_key = $2 AND j.state IN ('waiting', 'queued')
      RETURNING j.id, j.queue, j.state, j.run_at
    )
    SELECT id, CASE WHEN state = 'queued' AND run_at <= $6 THEN ${notifySql('queue', '$3', 'queue')} END FROM u`,

    // Queues that just got their first job with a group or a serial key: from
    // now on only the controlled claim may serve them, and every instance
    // hears of it. A queue already flagged is neither locked nor written.
    flagQueues: `WITH f AS (
      SELECT t.q, bool_or(t.g) AS g, bool_or(t.sr) AS sr FROM unnest($1::text[], $2::boolean[], $3::boolean[]) AS t(q, g, sr)
       GROUP BY t.q
    ), ins AS (
      INSERT INTO ${s}.job_queue (name, has_groups, has_serial, updated_at)
      SELECT f.q, f.g, f.sr, $4 FROM f
      ON CONFLICT (name) DO NOTHING
      RETURNING name
    ), upd AS (
      UPDATE ${s}.job_queue jq SET has_groups = jq.has_groups OR f.g, has_serial = jq.has_serial OR f.sr, updated_at = $4
        FROM f WHERE jq.name = f.q AND ((f.g AND NOT jq.has_groups) OR (f.sr AND NOT jq.has_serial))
      RETURNING jq.name
    )
    SELECT ${notifySql('queues', '$5', 'x.name')} FROM (SELECT name FROM ins UNION SELECT name FROM upd) x`,

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
          WHERE state = 'queued' AND queue = $1 AND coalesce(group_key, serial_key) IS NULL
            AND run_at <= $2 AND name = ANY($3::text[]) AND (deadline IS NULL OR deadline > $2)
          ORDER BY priority DESC, run_at, id
          LIMIT $4
          FOR UPDATE SKIP LOCKED))
      RETURNING j.id, j.name, j.queue, j.payload, j.attempt, j.max_attempts, j.timeout_ms, j.batch_id, j.priority, j.run_at,
                j.trace_context, j.deadline, j.has_parents
    )
    SELECT id, name, queue, payload, attempt, max_attempts AS "maxAttempts", timeout_ms AS "timeoutMs",
           batch_id AS "batchId", trace_context AS "traceContext", deadline, ${lineageIfParents('u')}
      FROM u ORDER BY priority DESC, run_at, id`,

    // A queue with limits, groups, serial keys or a pause: see claim_controlled (migrations 0005-0008).
    // Rows with a null id carry only wait_ms: when a rate limit lets the next job start.
    claimControlled: `SELECT c.id, c.name, c.queue, c.payload, c.attempt, c.max_attempts AS "maxAttempts",
           c.timeout_ms AS "timeoutMs", c.batch_id AS "batchId", c.trace_context AS "traceContext", c.deadline,
           c.wait_ms AS "waitMs", ${lineageColumns}
      FROM ${s}.claim_controlled($1, $3::text[], $4, $2, $5, $6) c ${lineage('c')}`,

    // Jobs whose deadline passed before they could start fail for good, their onFailure recorded.
    expireDeadlines: `WITH x AS (
      SELECT id FROM ${s}.job
       WHERE deadline IS NOT NULL AND state IN ('waiting', 'queued') AND deadline <= $1
       ORDER BY deadline LIMIT $2
       FOR UPDATE SKIP LOCKED
    ), u AS (
      UPDATE ${s}.job j
         SET state = 'failed', completed_at = $1, failure_hook = 'pending',
             last_error = jsonb_build_object('name', '${DEADLINE_EXCEEDED}',
               'message', format('Job "%s" (%s) failed for good: its deadline %s passed before it could start',
                                 j.name, j.id, to_char(j.deadline AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
        FROM x WHERE j.id = x.id
      RETURNING j.id, j.batch_id, j.has_dependents
    ), ${settle('u', `'failed'`, '$1', '$3')}
    SELECT (SELECT count(*) FROM u)::int AS expired, (SELECT count(*) FROM settled)::int AS settled`,

    succeed: `WITH u AS (
      ${succeeded}
    ), ${settle('u', `'succeeded'`, '$3', '$4')}
    SELECT id FROM u UNION ALL SELECT NULL FROM settled`,

    // succeed, and a claim of a limited queue ($7..$10) in the same statement: the slots these
    // outcomes free are refilled without a second round trip. The claim's argument reads u and
    // settled, so both are written before claim_controlled runs; as a volatile function its
    // statements see them (the freed slots count as free) and take the queue's lock after this
    // statement's row locks, the order every outcome write keeps. Rows: done = true for an
    // applied outcome (id only), false for a claimed job or the rate limit's wait row.
    succeedAndClaim: `WITH u AS (
      ${succeeded}
    ), ${settle('u', `'succeeded'`, '$3', '$4')}, written AS (
      SELECT (SELECT count(*) FROM u) + (SELECT count(*) FROM settled) AS n
    )
    SELECT true AS done, id, NULL::text AS name, NULL::text AS queue, NULL::jsonb AS payload, NULL::int AS attempt,
           NULL::int AS "maxAttempts", NULL::int AS "timeoutMs", NULL::uuid AS "batchId", NULL::jsonb AS "traceContext",
           NULL::timestamptz AS deadline, NULL::float8 AS "waitMs", NULL::uuid[] AS "parentIds", NULL::uuid AS "parentBatchId"
      FROM u
    UNION ALL
    SELECT false, c.id, c.name, c.queue, c.payload, c.attempt, c.max_attempts, c.timeout_ms, c.batch_id, c.trace_context,
           c.deadline, c.wait_ms, p.parent_ids, p.parent_batch_id
      FROM written CROSS JOIN LATERAL ${s}.claim_controlled($7, $8::text[], $9 + 0 * written.n::int, $3, $2, $10) c
      ${lineage('c')}`,

    // A failed attempt leaves a history row; the job row moves on in the same statement.
    fail: `WITH u AS (
      UPDATE ${s}.job j
         SET state = ${failed('state')}, run_at = coalesce((${failed('run_at')})::timestamptz, j.run_at),
             max_attempts = j.max_attempts + CASE WHEN (${failed('extra')})::boolean THEN 1 ELSE 0 END,
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
    ), u AS (
      UPDATE ${s}.job j
         SET failure_hook = 'running', hook_worker_id = $1,
             hook_lease_expires_at = $2::timestamptz + make_interval(secs => $5::float8 / 1000)
        FROM c WHERE j.id = c.id
      RETURNING j.id, j.name, j.queue, j.payload, j.attempt, j.max_attempts, j.timeout_ms, j.batch_id, j.last_error
    )
    SELECT u.id, u.name, u.queue, u.payload, u.attempt, u.max_attempts AS "maxAttempts", u.timeout_ms AS "timeoutMs",
           u.batch_id AS "batchId", u.last_error AS error, ${lineageColumns}
      FROM u ${lineage('u')}`,

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

    // A retried job that settled a batch or parents reopens them (reopen_job). Its finished steps
    // stay, so the next attempt answers them from storage, unless $5 (resetSteps) clears them.
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
    ), forget AS (
      DELETE FROM ${s}.job_step st USING u WHERE $5::boolean AND st.job_id = u.id
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
