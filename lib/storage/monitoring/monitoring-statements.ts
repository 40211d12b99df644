import { statement } from '../sql/named-params.js';
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
    // `finishedFrom`: the smallest id of the finished-jobs window (null: skip them;
    // the statement is unnamed, so its plan folds that branch away).
    counts: statement<{ now: Date; finishedFrom: string | null }>()(
      ['now', 'finishedFrom'],
      (p) => `SELECT queue, CASE WHEN run_at <= ${p.now} THEN 'queued' ELSE 'scheduled' END AS state, count(*)::int AS n
        FROM ${s}.job WHERE state = 'queued' GROUP BY 1, 2
      UNION ALL
      SELECT queue, 'waiting', count(*)::int FROM ${s}.job WHERE state = 'waiting' GROUP BY 1
      UNION ALL
      SELECT queue, 'active', count(*)::int FROM ${s}.job
       WHERE lease_expires_at IS NOT NULL AND state = 'active' GROUP BY 1
      UNION ALL
      SELECT queue, state, count(*)::int FROM ${s}.job
       WHERE ${p.finishedFrom}::uuid IS NOT NULL AND id >= ${p.finishedFrom}::uuid AND state IN ('succeeded', 'failed', 'cancelled', 'skipped') GROUP BY 1, 2`,
    ),

    // The queued rows are read off the claim index (its predicate is state = 'queued'),
    // the same rows the counts' queued part reads.
    queueLag: statement<{ now: Date }>()(
      ['now'],
      (p) => `SELECT queue, count(*)::int AS due, min(run_at) AS oldest_due_at
      FROM ${s}.job WHERE state = 'queued' AND run_at <= ${p.now}
      GROUP BY queue ORDER BY queue`,
    ),

    // `liveSince`: the oldest heartbeat of a live worker.
    unhandledPairs: statement<{ now: Date; liveSince: Date }>()(
      ['now', 'liveSince'],
      (p) => `WITH RECURSIVE ${unhandledPairs(s, p.now, p.liveSince)}
    SELECT queue, name FROM up`,
    ),

    // The due jobs of the names unhandledPairs found (their queues and names), counted
    // in full: only read while some job has no live worker to run it.
    unhandledCounts: statement<{ now: Date; queues: readonly string[]; names: readonly string[] }>()(
      ['now', 'queues', 'names'],
      (p) => `SELECT queue, name, count(*)::int AS due, min(run_at) AS oldest_due_at
      FROM ${s}.job WHERE state = 'queued' AND queue = ANY(${p.queues}::text[]) AND name = ANY(${p.names}::text[]) AND run_at <= ${p.now}
      GROUP BY queue, name`,
    ),

    // Running workers, and those stopped since `stoppedSince`.
    workers: statement<{ stoppedSince: Date }>()(
      ['stoppedSince'],
      (p) => `SELECT id, host, pid, queues, concurrency, active, started_at, last_heartbeat, stopped_at,
                     connections_open, connections_max
      FROM ${s}.worker WHERE stopped_at IS NULL OR stopped_at >= ${p.stoppedSince}
      ORDER BY started_at DESC, id`,
    ),
  };
}

export type MonitoringStatements = ReturnType<typeof monitoringStatements>;
