import { statement } from '../sql/named-params.js';
import { LIVE_JOB_STATES, NOT_STARTED_STATES, RETRYABLE_STATES } from '../../model/index.js';
import { quoteIdent, sqlLiterals } from '../sql/sql-identifiers.js';
import { notifySql } from '../sql/notification-topics.js';
import { noLiveChildren, noPendingHook } from '../jobs/job-fragments.js';
import { ROUTINE_NAMES } from '../routines/routine-catalog.js';

const SUMMARY_COLUMNS = `id, name, queue, state, priority, attempt, max_attempts, run_at, created_at, started_at,
       completed_at, progress, worker_id, batch_id, last_error`;

const LIVE = sqlLiterals(LIVE_JOB_STATES);

/**
 * The SQL of operators' actions for one schema. Searches and bulk actions
 * are built around a chunk selection (see admin-filter.ts) and run unnamed,
 * each planned for its own filter. Bulk writes lock their chunk in id order
 * with SKIP LOCKED: a row a worker is claiming or finishing at that moment
 * is passed over rather than waited for, so a chunk never queues behind the
 * hot path nor makes the hot path queue behind it.
 */
export function adminStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    search: (where: string, limit: string) => `SELECT ${SUMMARY_COLUMNS} FROM ${s}.job
      WHERE ${where} ORDER BY id DESC LIMIT ${limit}`,

    /** A chunk of a bulk action: the next `limit` matching rows by id, locked, passing over locked ones. */
    chunk: (where: string, limit: string) => `SELECT id, state, batch_id, has_dependents FROM ${s}.job
      WHERE ${where} ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED`,

    // The bulk form of JobStatements.retry, with the same reset of the row:
    // a retried job gets a fresh set of attempts and loses its last run's
    // outcome; one that settled a batch or parents reopens them
    // (reopen_job, one call per such row, after every row of the chunk is
    // queued again). $1 now, $2 the channel.
    retry: (chunk: string) => `WITH prev AS (${chunk}), u AS (
      UPDATE ${s}.job j
         SET state = 'queued', max_attempts = j.attempt + j.max_attempts, run_at = $1, completed_at = NULL,
             worker_id = NULL, cancel_requested = false, result = NULL, progress = NULL, progress_message = NULL,
             failure_hook = NULL, hook_worker_id = NULL, hook_lease_expires_at = NULL,
             hook_attempt = 0, hook_run_at = NULL, hook_error = NULL
        FROM prev WHERE j.id = prev.id AND j.state IN (${sqlLiterals(RETRYABLE_STATES)})
      RETURNING j.id, j.queue
    ), r AS (
      SELECT ${s}.${ROUTINE_NAMES.reopenJob}(prev.id, prev.state) FROM prev WHERE prev.batch_id IS NOT NULL OR prev.has_dependents
    ), n AS (
      SELECT ${notifySql('queue', '$2', 'q.queue')} FROM (SELECT DISTINCT queue FROM u) q
    )
    SELECT id, NULL::uuid AS seen FROM u
    UNION ALL SELECT NULL, NULL FROM r
    UNION ALL SELECT NULL, NULL FROM n
    UNION ALL SELECT NULL, id FROM prev`,

    // The bulk form of JobStatements.cancelQueued: cancelled now, then
    // batches and dependents settle as for a single cancel. $1 now, $2 the channel.
    cancel: (chunk: string) => `WITH c AS (${chunk}), u AS (
      UPDATE ${s}.job j SET state = 'cancelled', completed_at = $1, cancel_requested = true
        FROM c WHERE j.id = c.id AND j.state IN (${sqlLiterals(NOT_STARTED_STATES)})
      RETURNING j.id, j.batch_id, j.has_dependents
    ), w AS (
      SELECT array_agg(id) AS ids FROM u WHERE batch_id IS NOT NULL OR has_dependents
    ), settled AS (
      SELECT ${s}.${ROUTINE_NAMES.settleJobs}(w.ids, array_fill('cancelled'::text, ARRAY[array_length(w.ids, 1)]), NULL, $1, $2)
        FROM w WHERE w.ids IS NOT NULL
    )
    SELECT id, NULL::uuid AS seen FROM u
    UNION ALL SELECT NULL, NULL FROM settled
    UNION ALL SELECT NULL, id FROM c`,

    // The bulk form of JobStatements.cancelActive: the worker holding each
    // job hears of it at once (or at its next lease renewal). $1 the channel.
    requestCancel: (chunk: string) => `WITH c AS (${chunk}), u AS (
      UPDATE ${s}.job j SET cancel_requested = true
        FROM c WHERE j.id = c.id AND j.state = 'active' AND NOT j.cancel_requested
      RETURNING j.id
    ), n AS (
      SELECT ${notifySql('cancel', '$1', 'u.id::text')} FROM u
    )
    SELECT id, NULL::uuid AS seen FROM u
    UNION ALL SELECT NULL, NULL FROM n
    UNION ALL SELECT NULL, id FROM c`,

    // Only a job queued for later moves.
    runNow: statement<{ jobId: string; now: Date; channel: string }>()(
      ['jobId', 'now', 'channel'],
      (p) => `WITH prev AS (
      SELECT id, run_at FROM ${s}.job WHERE id = ${p.jobId} AND state = 'queued' AND run_at > ${p.now} FOR UPDATE
    ), u AS (
      UPDATE ${s}.job j SET run_at = ${p.now} FROM prev WHERE j.id = prev.id RETURNING j.id, j.queue, prev.run_at AS previous
    )
    SELECT id, queue, previous, ${notifySql('queue', p.channel, 'queue')} FROM u`,
    ),

    stateOf: statement<{ jobId: string }>()(
      ['jobId'],
      (p) => `SELECT state, run_at, batch_id, failure_hook FROM ${s}.job WHERE id = ${p.jobId}`,
    ),
    lockJob: statement<{ jobId: string }>()(
      ['jobId'],
      (p) => `SELECT state, batch_id, failure_hook FROM ${s}.job WHERE id = ${p.jobId} FOR UPDATE`,
    ),

    // Run after lockJob in the same transaction: an enqueue naming this job
    // as a parent locks it first, so the check sees every edge made before.
    deleteJob: statement<{ jobId: string }>()(
      ['jobId'],
      (p) => `WITH blockers AS (
      SELECT count(*)::int AS n FROM ${s}.job_dependency d JOIN ${s}.job c ON c.id = d.child_id
       WHERE d.parent_job_id = ${p.jobId} AND c.state IN (${LIVE})
    ), d AS (
      DELETE FROM ${s}.job WHERE id = ${p.jobId} AND (SELECT n FROM blockers) = 0 RETURNING id
    )
    SELECT (SELECT n FROM blockers) AS children, (SELECT count(*) FROM d)::int AS deleted`,
    ),

    // Ids are UUIDv7: a job that ended before `before` was created before it, so
    // the id bound (`beforeId`) makes the walk a key range (the failed index's, for
    // failed jobs). `after`: the previous round's last id.
    purgeCandidates: statement<{ state: string; beforeId: string; after: string; before: Date; limit: number }>()(
      ['state', 'beforeId', 'after', 'before', 'limit'],
      (p) => `SELECT id FROM ${s}.job
      WHERE state = ${p.state} AND id < ${p.beforeId}::uuid AND id > ${p.after}::uuid AND completed_at < ${p.before} AND batch_id IS NULL
      ORDER BY id LIMIT ${p.limit} FOR UPDATE SKIP LOCKED`,
    ),

    // A second statement, after purgeCandidates locked the rows: its fresh
    // snapshot sees every edge made to them before (see deleteJob).
    purgeJobs: statement<{ ids: readonly string[] }>()(
      ['ids'],
      (p) => `DELETE FROM ${s}.job j
      WHERE j.id = ANY(${p.ids}::uuid[]) AND ${noLiveChildren(s, 'j')} AND ${noPendingHook('j')}
      RETURNING j.id`,
    ),

    listBatches: (where: string, limit: string) => `SELECT id, name, state, total, pending, succeeded, failed,
             cancelled, skipped, created_at, completed_at
        FROM ${s}.job_batch WHERE ${where} ORDER BY id DESC LIMIT ${limit}`,

    // Parents: jobs and batches; the edge says how the child wanted each to end.
    parents: statement<{ jobId: string }>()(
      ['jobId'],
      (p) => `SELECT d.trigger, d.parent_outcome, d.parent_job_id, d.parent_batch_id,
             p.name AS job_name, p.state AS job_state, b.name AS batch_name, b.state AS batch_state
        FROM ${s}.job_dependency d
        LEFT JOIN ${s}.job p ON p.id = d.parent_job_id
        LEFT JOIN ${s}.job_batch b ON b.id = d.parent_batch_id
       WHERE d.child_id = ${p.jobId}
       ORDER BY coalesce(d.parent_job_id, d.parent_batch_id)`,
    ),
    // The children this job's ctx.invoke() enqueued, oldest first.
    invoked: statement<{ jobId: string; limit: number }>()(
      ['jobId', 'limit'],
      (p) => `SELECT id, name, state FROM ${s}.job WHERE invoked_by = ${p.jobId} ORDER BY id LIMIT ${p.limit}`,
    ),

    children: statement<{ jobId: string; limit: number }>()(
      ['jobId', 'limit'],
      (p) => `SELECT d.trigger, d.parent_outcome, c.id, c.name, c.state
        FROM ${s}.job_dependency d JOIN ${s}.job c ON c.id = d.child_id
       WHERE d.parent_job_id = ${p.jobId}
       ORDER BY c.id LIMIT ${p.limit}`,
    ),

    // completed_at has no index (it would cost every completion a write), so
    // the window is read among the jobs created since `createdFrom`, a primary-key range.
    // Minutes are cut from the epoch: the same in every session time zone. The successes
    // of job types that keep none are counted in job_forgotten instead (one row per minute, queue
    // and writing backend): a queue and minute may come as more than one row, which the caller adds up.
    throughput: statement<{ since: Date; until: Date; createdFrom: string; queue: string | null }>()(
      ['since', 'until', 'createdFrom', 'queue'],
      (p) => `SELECT queue, to_timestamp(floor(extract(epoch FROM completed_at) / 60) * 60) AS minute,
             count(*) FILTER (WHERE state = 'succeeded')::int AS succeeded,
             count(*) FILTER (WHERE state = 'failed')::int AS failed
        FROM ${s}.job
       WHERE id >= ${p.createdFrom}::uuid AND state IN ('succeeded', 'failed') AND completed_at >= ${p.since} AND completed_at < ${p.until}
         AND (${p.queue}::text IS NULL OR queue = ${p.queue})
       GROUP BY 1, 2
      UNION ALL
      SELECT queue, minute, sum(succeeded)::int, 0
        FROM ${s}.job_forgotten
       WHERE minute >= ${p.since} AND minute < ${p.until} AND (${p.queue}::text IS NULL OR queue = ${p.queue})
       GROUP BY 1, 2`,
    ),
  };
}

export type AdminStatements = ReturnType<typeof adminStatements>;
