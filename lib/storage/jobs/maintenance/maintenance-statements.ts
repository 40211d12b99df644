import { statement } from '../../sql/named-params.js';
import { DeadlineExceededError, JobCancelledError, LeaseLostError, RATE_START_LAG_MS } from '../../../model/index.js';
import { quoteIdent } from '../../sql/sql-identifiers.js';
import { notifySql } from '../../sql/notification-topics.js';
import { noLiveChildren, settleCte } from '../job-fragments.js';
import { latestSchemaVersion } from '../../migrations/migration-files.js';
import { noLiveHandler, unhandledPairs } from '../unhandled-jobs-sql.js';

/** The error an interrupted attempt records: the one its worker's signal aborted with. */
const LEASE_LOST = LeaseLostError.name;
const DEADLINE_EXCEEDED = DeadlineExceededError.name;
/** The error of a job whose accepted cancel a rescue or a hand-back carries out. */
const CANCELLED = JobCancelledError.name;
/** The error of a job failed because no live worker handles its name (`unhandledJobs.failAfter`). */
export const UNHANDLED_JOB_ERROR = 'UnhandledJobError';

/** The SQL of rescue, deadlines, retention and the worker registry, for one schema, built once. */
/** A pass over jobs: its time, its size, the channel its settles notify on. */
interface JobPass {
  now: Date;
  limit: number;
  channel: string;
}

export function maintenanceStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    // Jobs whose deadline passed before they could start fail for good, their onFailure recorded.
    expireDeadlines: statement<JobPass>()(
      ['now', 'limit', 'channel'],
      (p) => `WITH x AS (
      SELECT id FROM ${s}.job
       WHERE deadline IS NOT NULL AND state IN ('waiting', 'queued') AND deadline <= ${p.now}
       ORDER BY deadline LIMIT ${p.limit}
       FOR UPDATE SKIP LOCKED
    ), u AS (
      UPDATE ${s}.job j
         SET state = 'failed', completed_at = ${p.now}, failure_hook = 'pending',
             last_error = jsonb_build_object('name', '${DEADLINE_EXCEEDED}',
               'message', format('Job "%s" (%s) failed for good: its deadline %s passed before it could start',
                                 j.name, j.id, to_char(j.deadline AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
        FROM x WHERE j.id = x.id
      RETURNING j.id, j.batch_id, j.has_dependents
    ), ${settleCte(s, 'u', `'failed'`, p.now, p.channel)}
    SELECT (SELECT count(*) FROM u)::int AS expired, (SELECT count(*) FROM settled)::int AS settled`,
    ),

    // The (queue, name) pairs of due jobs that no live worker handles (`liveSince`: the oldest
    // heartbeat of a live worker): what failUnhandled looks at.
    unhandledPairs: statement<{ now: Date; liveSince: Date }>()(
      ['now', 'liveSince'],
      (p) => `WITH RECURSIVE ${unhandledPairs(s, p.now, p.liveSince)}
    SELECT queue, name FROM up`,
    ),

    // Queued jobs of the queues and names given, due since before `dueBefore`, that no live worker
    // handles (checked again per job, under its lock), fail for good (unhandledJobs.failAfter). No
    // onFailure is recorded: no live instance has the job's handler to run it. No attempt ran, so
    // no history row is written.
    failUnhandled: statement<{
      now: Date;
      liveSince: Date;
      dueBefore: Date;
      limit: number;
      channel: string;
      failAfter: number;
      queues: readonly string[];
      names: readonly string[];
    }>()(
      ['now', 'liveSince', 'dueBefore', 'limit', 'channel', 'failAfter', 'queues', 'names'],
      (p) => `WITH x AS (
      SELECT j.id FROM ${s}.job j
       WHERE j.state = 'queued' AND j.queue = ANY(${p.queues}::text[]) AND j.name = ANY(${p.names}::text[]) AND j.run_at <= ${p.dueBefore}
         AND ${noLiveHandler(s, 'j.queue', 'j.name', p.liveSince)}
       ORDER BY j.run_at LIMIT ${p.limit}
       FOR UPDATE SKIP LOCKED
    ), u AS (
      UPDATE ${s}.job j
         SET state = 'failed', completed_at = ${p.now},
             last_error = jsonb_build_object('name', '${UNHANDLED_JOB_ERROR}',
               'message', format('Job "%s" (%s) failed for good: no live worker handles job name "%s" in queue "%s", '
                 || 'and it was due for longer than unhandledJobs.failAfter (%s ms). Potential fix: deploy a worker '
                 || 'whose app registers @Job(''%s'') and serves queue "%s", then retry the job; or cancel such jobs.',
                 j.name, j.id, j.name, j.queue, ${p.failAfter}::int, j.name, j.queue))
        FROM x WHERE j.id = x.id AND j.state = 'queued'
      RETURNING j.id, j.batch_id, j.has_dependents
    ), ${settleCte(s, 'u', `'failed'`, p.now, p.channel)}
    SELECT (SELECT count(*) FROM u)::int AS failed, (SELECT count(*) FROM settled)::int AS settled`,
    ),

    // A rescued job keeps its run_at: it was due before the jobs queued since,
    // so it goes back to the front of its queue rather than behind a backlog.
    // One failed for good gets its onFailure hook recorded, for the sweep. A traced attempt's span
    // is on the row once a renewal wrote it (renewTraced), with its handler's start, which is
    // after this attempt's claim (started_at): the history row records them.
    // A job whose cancel was accepted (cancel_requested) ends cancelled here: its worker died or
    // stalled before acting on it, and running it again would undo the cancel.
    rescue: statement<JobPass>()(
      ['now', 'limit', 'channel'],
      (p) => `WITH x AS (
      SELECT id, worker_id, cancel_requested AS cancelled,
             CASE WHEN handler_started_at >= started_at THEN handler_started_at END AS handler_started_at,
             CASE WHEN handler_started_at >= started_at THEN trace_id END AS trace_id,
             CASE WHEN handler_started_at >= started_at THEN span_id END AS span_id
        FROM ${s}.job
       WHERE state = 'active' AND lease_expires_at < ${p.now}
       ORDER BY lease_expires_at LIMIT ${p.limit}
       FOR UPDATE SKIP LOCKED
    ), u AS (
      UPDATE ${s}.job j
         SET state = CASE WHEN x.cancelled THEN 'cancelled' WHEN j.attempt >= j.max_attempts THEN 'failed' ELSE 'queued' END,
             lease_expires_at = NULL, worker_id = NULL, reserved = false,
             completed_at = CASE WHEN x.cancelled OR j.attempt >= j.max_attempts THEN ${p.now}::timestamptz END,
             failure_hook = CASE WHEN NOT x.cancelled AND j.attempt >= j.max_attempts THEN 'pending' END,
             last_error = CASE
               WHEN x.cancelled THEN jsonb_build_object(
                 'name', '${CANCELLED}',
                 'message', format('Job %s was cancelled; its worker %s stopped renewing the lease (crashed or stalled) before it ended the attempt',
                                   j.id, x.worker_id))
               WHEN j.attempt >= j.max_attempts THEN jsonb_build_object(
                 'name', '${LEASE_LOST}',
                 'message', format('Attempt %s of %s was interrupted (worker %s stopped renewing its lease) and no attempts remain',
                                   j.attempt, j.max_attempts, x.worker_id))
               ELSE j.last_error END,
             trace_id = NULL, span_id = NULL, handler_started_at = NULL
        FROM x WHERE j.id = x.id
      RETURNING j.id, j.attempt, j.started_at, x.worker_id, j.state, j.queue, j.batch_id, j.has_dependents,
                x.handler_started_at, x.trace_id, x.span_id, j.last_error
    ), ${settleCte(s, `(SELECT * FROM u WHERE state IN ('failed', 'cancelled'))`, 'state', p.now, p.channel)}, ex AS (
      INSERT INTO ${s}.job_execution (job_id, attempt, worker_id, state, claimed_at, started_at, ended_at, error, trace_id, span_id)
      SELECT id, attempt, worker_id, CASE WHEN state = 'cancelled' THEN 'cancelled' ELSE 'interrupted' END,
             started_at, coalesce(handler_started_at, started_at), ${p.now},
             CASE WHEN state = 'cancelled' THEN last_error
                  ELSE jsonb_build_object('name', '${LEASE_LOST}',
                                          'message', format('Worker %s stopped renewing the lease (crashed or stalled)', worker_id)) END,
             trace_id, span_id
        FROM u
    ), n AS (
      SELECT ${notifySql('queue', p.channel, 'queue')} FROM (SELECT DISTINCT queue FROM u WHERE state = 'queued') q
    )
    SELECT (SELECT count(*) FROM u)::int AS rescued, (SELECT count(*) FROM u WHERE state = 'failed')::int AS failed,
           (SELECT count(*) FROM u WHERE state = 'cancelled')::int AS cancelled,
           (SELECT count(*) FROM n)::int AS notified, (SELECT count(*) FROM settled)::int AS settled`,
    ),

    registerWorker: statement<{
      id: string;
      host: string;
      pid: number;
      queues: readonly string[];
      concurrency: number;
      now: Date;
      connectionsOpen: number | null;
      connectionsMax: number;
      service: string;
      jobNames: readonly string[];
    }>()(
      ['id', 'host', 'pid', 'queues', 'concurrency', 'now', 'connectionsOpen', 'connectionsMax', 'service', 'jobNames'],
      (p) => `INSERT INTO ${s}.worker (id, host, pid, queues, concurrency, started_at, last_heartbeat, schema_version,
                                             connections_open, connections_max, service, job_names)
      VALUES (${p.id}, ${p.host}, ${p.pid}, ${p.queues}, ${p.concurrency}, ${p.now}, ${p.now}, ${latestSchemaVersion()}, ${p.connectionsOpen}, ${p.connectionsMax}, ${p.service}, ${p.jobNames})
      ON CONFLICT (id) DO UPDATE SET last_heartbeat = EXCLUDED.last_heartbeat, stopped_at = NULL,
                                     schema_version = EXCLUDED.schema_version,
                                     service = EXCLUDED.service, job_names = EXCLUDED.job_names,
                                     connections_open = EXCLUDED.connections_open, connections_max = EXCLUDED.connections_max`,
    ),

    // No row: retention removed it (a clock that jumped); the worker registers again.
    heartbeatWorker: statement<{
      id: string;
      now: Date;
      active: number;
      connectionsOpen: number | null;
      connectionsMax: number;
    }>()(
      ['id', 'now', 'active', 'connectionsOpen', 'connectionsMax'],
      (
        p,
      ) => `UPDATE ${s}.worker SET last_heartbeat = ${p.now}, active = ${p.active}, connections_open = ${p.connectionsOpen}, connections_max = ${p.connectionsMax}
      WHERE id = ${p.id} RETURNING 1`,
    ),

    unregisterWorker: statement<{ id: string; now: Date }>()(
      ['id', 'now'],
      (p) => `UPDATE ${s}.worker SET stopped_at = ${p.now}, active = 0 WHERE id = ${p.id}`,
    ),

    // Retention walks the primary key: ids are UUIDv7, so "created before the
    // cutoff" is a key range and no completed_at index is paid for on every
    // completion. Batch members go with their batch; parents wait for children.
    // Each chunk starts past the last id the one before it deleted (`after`): the
    // rows it passed over (kept longer, or parents still waited on) are not
    // read again by every later chunk, which made a pass over millions of rows
    // quadratic in the rows kept between them.
    prune: statement<{ beforeId: string; states: readonly string[]; before: Date; limit: number; after: string }>()(
      ['beforeId', 'states', 'before', 'limit', 'after'],
      (p) => `WITH doomed AS (
      SELECT j.id FROM ${s}.job j
       WHERE j.id > ${p.after}::uuid AND j.id < ${p.beforeId}::uuid AND j.state = ANY(${p.states}::text[]) AND j.completed_at < ${p.before}
         AND j.batch_id IS NULL
         AND ${noLiveChildren(s, 'j')}
       ORDER BY j.id LIMIT ${p.limit}
       FOR UPDATE SKIP LOCKED
    )
    DELETE FROM ${s}.job j USING doomed WHERE j.id = doomed.id RETURNING j.id`,
    ),

    // Rows of workers stopped (or silent: crashed) before `before`.
    pruneWorkers: statement<{ before: Date }>()(
      ['before'],
      (p) => `DELETE FROM ${s}.worker WHERE coalesce(stopped_at, last_heartbeat) < ${p.before} RETURNING 1`,
    ),

    // The counts of forgotten successes of minutes before `before`: throughput reads no further back.
    pruneForgotten: statement<{ before: Date }>()(
      ['before'],
      (p) => `DELETE FROM ${s}.job_forgotten WHERE minute < ${p.before} RETURNING 1`,
    ),

    // A group's rate log (claim_controlled's group-rates.ts) whose latest start left its window (per
    // plus the start lag) a minute before `now`, or of a queue whose groups lost their rate limit: the
    // claim would count none of it. The minute spares logs an instance whose clock is behind still
    // counts. Rows a claim is writing are skipped, not waited for: the next pass takes them.
    pruneGroupRates: statement<{ now: Date }>()(
      ['now'],
      (p) => `DELETE FROM ${s}.job_group_rate r USING (
      SELECT g.queue, g.group_key FROM ${s}.job_group_rate g LEFT JOIN ${s}.job_queue q ON q.name = g.queue
       WHERE q.group_rate_max IS NULL
          OR g.last_at < ${p.now}::timestamptz - make_interval(secs => (q.group_rate_per_ms + ${RATE_START_LAG_MS}) / 1000.0)
                         - interval '1 minute'
         FOR UPDATE OF g SKIP LOCKED) d
     WHERE r.queue = d.queue AND r.group_key = d.group_key RETURNING 1`,
    ),
  };
}

export type MaintenanceStatements = ReturnType<typeof maintenanceStatements>;
