import { quoteIdent } from '../../sql/sql-identifiers.js';
import { LINEAGE_COLUMNS, lineageIfParents, lineageJoin } from '../job-fragments.js';
import { ROUTINE_NAMES } from '../../routines/routine-catalog.js';
import { waitingWithout } from '../../routines/limit-shares.js';
import { plainClaim } from '../../routines/sql-fragments.js';

/**
 * The claim SQL for one schema, built once. Both claims run as prepared
 * statements on the worker's own connections (PostgresClaimStorage).
 */
export function claimStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    // The plain claim (see plainClaim for why it reaches its rows by ctid).
    claim: `WITH u AS (
      ${plainClaim({
        table: `${s}.job`,
        queue: '$1',
        now: '$2::timestamptz',
        names: '$3::text[]',
        limit: '$4',
        worker: '$5',
        startedAt: '$2',
        leaseMs: '$6::float8',
        returning: `j.id, j.name, j.queue, j.payload, j.attempt, j.max_attempts, j.timeout_ms, j.batch_id, j.priority, j.run_at,
                j.trace_context, j.deadline, j.has_parents, j.context`,
      })}
    )
    SELECT id, name, queue, payload, attempt, max_attempts AS "maxAttempts", timeout_ms AS "timeoutMs",
           batch_id AS "batchId", trace_context AS "traceContext", deadline, run_at AS "runAt", context,
           ${lineageIfParents(s, 'u')}
      FROM u ORDER BY priority DESC, run_at, id`,

    // A queue with limits, groups, serial keys or a pause: see the claim_controlled routine.
    // Rows with a null id carry only wait_ms: when a rate limit lets the next job start.
    claimControlled: `SELECT c.id, c.name, c.queue, c.payload, c.attempt, c.max_attempts AS "maxAttempts",
           c.timeout_ms AS "timeoutMs", c.batch_id AS "batchId", c.trace_context AS "traceContext", c.deadline,
           c.run_at AS "runAt", c.wait_ms AS "waitMs", c.reserved, c.context, ${LINEAGE_COLUMNS}
      FROM ${s}.${ROUTINE_NAMES.claimControlled}($1, $3::text[], $4, $2, $5, $6, $7, $8, $9) c ${lineageJoin(s, 'c')}`,

    // A stopping worker's waits for limited queues' slots (see limit-shares): the others need not keep
    // to their shares for it until its entries lapse.
    leaveWaits: `UPDATE ${s}.job_queue jq SET (waiting_workers, waiting_until) = ${waitingWithout('$1', 'now()')}
       WHERE $1 = ANY(jq.waiting_workers)`,

    // A loose index scan over the claim index: one probe per distinct queue.
    queuesWithWork: `WITH RECURSIVE q AS (
      (SELECT queue FROM ${s}.job WHERE state = 'queued' ORDER BY queue LIMIT 1)
      UNION ALL
      SELECT (SELECT j.queue FROM ${s}.job j WHERE j.state = 'queued' AND j.queue > q.queue ORDER BY j.queue LIMIT 1)
        FROM q WHERE q.queue IS NOT NULL
    )
    SELECT queue FROM q WHERE queue IS NOT NULL`,
  };
}

export type ClaimStatements = ReturnType<typeof claimStatements>;
