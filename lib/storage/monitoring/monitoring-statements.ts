import { quoteIdent } from '../sql/sql-identifiers.js';
import { unhandledPairs } from '../jobs/unhandled-jobs-sql.js';

/**
 * What operators read. Each part of the counts is served by an index that
 * exists for the hot path, so counting never walks the history: queued jobs
 * by the claim index, waiting ones by theirs, active ones by the lease index
 * (a job holds a lease exactly while it is active), and finished ones by a
 * primary-key range (UUIDv7 ids are creation-time ordered).
 */
export function monitoringStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    // $1 now, $2 the smallest id of the finished-jobs window (null: skip them;
    // the statement is unnamed, so its plan folds that branch away).
    counts: `SELECT queue, CASE WHEN run_at <= $1 THEN 'queued' ELSE 'scheduled' END AS state, count(*)::int AS n
        FROM ${s}.job WHERE state = 'queued' GROUP BY 1, 2
      UNION ALL
      SELECT queue, 'waiting', count(*)::int FROM ${s}.job WHERE state = 'waiting' GROUP BY 1
      UNION ALL
      SELECT queue, 'active', count(*)::int FROM ${s}.job
       WHERE lease_expires_at IS NOT NULL AND state = 'active' GROUP BY 1
      UNION ALL
      SELECT queue, state, count(*)::int FROM ${s}.job
       WHERE $2::uuid IS NOT NULL AND id >= $2::uuid AND state IN ('succeeded', 'failed', 'cancelled', 'skipped') GROUP BY 1, 2`,

    // $1 now. The queued rows are read off the claim index (its predicate is state = 'queued'),
    // the same rows the counts' queued part reads.
    queueLag: `SELECT queue, count(*)::int AS due, min(run_at) AS oldest_due_at
      FROM ${s}.job WHERE state = 'queued' AND run_at <= $1
      GROUP BY queue ORDER BY queue`,

    // $1 now, $2 the oldest heartbeat of a live worker.
    unhandledPairs: `WITH RECURSIVE ${unhandledPairs(s, '$1', '$2')}
    SELECT queue, name FROM up`,

    // The due jobs of the names unhandledPairs found ($2 their queues, $3 their names), counted
    // in full: only read while some job has no live worker to run it.
    unhandledCounts: `SELECT queue, name, count(*)::int AS due, min(run_at) AS oldest_due_at
      FROM ${s}.job WHERE state = 'queued' AND queue = ANY($2::text[]) AND name = ANY($3::text[]) AND run_at <= $1
      GROUP BY queue, name`,

    // Running workers, and those stopped since $1.
    workers: `SELECT id, host, pid, queues, concurrency, active, started_at, last_heartbeat, stopped_at,
                     connections_open, connections_max
      FROM ${s}.worker WHERE stopped_at IS NULL OR stopped_at >= $1
      ORDER BY started_at DESC, id`,
  };
}

export type MonitoringStatements = ReturnType<typeof monitoringStatements>;
